// Vitrine's web page: plain browser JavaScript, no build step, no external resources. It calls the
// service's own REST API (same origin) with the key typed in. All text from the service goes into
// the page through textContent and attributes, never as markup.

const ORG_STORAGE = "vitrine.organizationId"; // localStorage: not a secret
const KEY_STORAGE = "vitrine.apiKey"; // sessionStorage: gone when the tab closes
const CATALOG_STORAGE = "vitrine.catalogId";
const POLL_MS = 2000;
const OPERATORS = new Set(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"]);

const $ = (id) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`missing #${id}`);
  return element;
};

const state = {
  org: "",
  key: "",
  catalogs: [],
  catalogId: "",
  products: new Map(), // productId -> Promise<Product>, for the chosen catalog
  pollTimer: 0,
  pollSeq: 0,
  searchSeq: 0,
  recsSeq: 0,
  searched: false,
};

// ---- the REST API ----------------------------------------------------------------------------

async function api(method, path, body) {
  const headers = { SERVICE_API_KEY: state.key, accept: "application/json" };
  const init = { method, headers };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new Error(`the service cannot be reached (${error instanceof Error ? error.message : String(error)})`);
  }
  const text = await response.text();
  let data;
  try {
    data = text === "" ? undefined : JSON.parse(text);
  } catch {
    data = undefined;
  }
  if (!response.ok) {
    // Every error answer is the documented Error object; its message says what went wrong.
    const message = data && typeof data.message === "string" ? data.message : `${response.status} ${response.statusText}`;
    throw new Error(message);
  }
  return data;
}

const orgPath = () => `/organizations/${encodeURIComponent(state.org)}`;
const catalogPath = (catalogId = state.catalogId) => `${orgPath()}/catalogs/${encodeURIComponent(catalogId)}`;

/** One product's details (objectUrl, descriptor), fetched once per catalog and shared by every card. */
function product(productId) {
  let pending = state.products.get(productId);
  if (!pending) {
    pending = api("GET", `${catalogPath()}/products/${encodeURIComponent(productId)}`);
    pending.catch(() => state.products.delete(productId));
    state.products.set(productId, pending);
  }
  return pending;
}

// ---- small DOM helpers -----------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (name === "className") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function showMessage(text, kind = "info") {
  const message = $("message");
  message.textContent = text;
  message.dataset.kind = kind;
}

function showError(error) {
  showMessage(error instanceof Error ? error.message : String(error), "error");
}

const formatValue = (value) => (typeof value === "string" ? value : JSON.stringify(value));

// ---- connection and catalogs -----------------------------------------------------------------

async function loadCatalogs() {
  state.org = $("org").value.trim();
  state.key = $("key").value.trim();
  localStorage.setItem(ORG_STORAGE, state.org);
  sessionStorage.setItem(KEY_STORAGE, state.key);
  const select = $("catalog");
  select.disabled = true;
  showMessage("Loading catalogs…");
  try {
    const catalogs = await api("GET", `${orgPath()}/catalogs`);
    state.catalogs = Array.isArray(catalogs) ? catalogs : [];
  } catch (error) {
    state.catalogs = [];
    select.replaceChildren(el("option", { value: "" }, "No catalogs"));
    selectCatalog("");
    showError(error);
    return;
  }
  const options = state.catalogs.map((c) => el("option", { value: c.id }, `${c.name} (${c.productCount ?? 0})`));
  select.replaceChildren(el("option", { value: "" }, state.catalogs.length ? "Choose a catalog…" : "No catalogs yet"), ...options);
  select.disabled = state.catalogs.length === 0;
  showMessage(`${state.catalogs.length} catalog${state.catalogs.length === 1 ? "" : "s"}.`);
  const remembered = localStorage.getItem(CATALOG_STORAGE);
  const keep = state.catalogs.some((c) => c.id === state.catalogId) ? state.catalogId : state.catalogs.some((c) => c.id === remembered) ? remembered : "";
  select.value = keep ?? "";
  selectCatalog(select.value);
}

function selectCatalog(catalogId) {
  state.catalogId = catalogId;
  state.products = new Map();
  state.searched = false;
  clearTimeout(state.pollTimer);
  state.pollSeq++;
  $("results").replaceChildren();
  $("results-summary").textContent = catalogId ? "Type a query and search." : "Pick a catalog and search.";
  closeRecs();
  $("search-button").disabled = !catalogId;
  const catalog = state.catalogs.find((c) => c.id === catalogId);
  $("catalog-info").hidden = !catalog;
  $("progress").hidden = !catalog;
  if (!catalog) return;
  localStorage.setItem(CATALOG_STORAGE, catalogId);
  showCatalogStatus(catalog.status, catalog.productCount);
  void pollProgress(state.pollSeq);
}

function showCatalogStatus(status, count) {
  const statusCell = $("catalog-status");
  statusCell.textContent = status ?? "unknown";
  statusCell.className = `status status-${String(status ?? "unknown").toLowerCase()}`;
  $("catalog-count").textContent = String(count ?? 0);
}

/** Progress of the chosen catalog; asked again every 2 s while it is PROCESSING. */
async function pollProgress(seq) {
  if (seq !== state.pollSeq) return;
  try {
    const progress = await api("GET", `${catalogPath()}/progress`);
    if (seq !== state.pollSeq) return;
    showProgress(progress);
    if (progress.status === "PROCESSING") state.pollTimer = setTimeout(() => void pollProgress(seq), POLL_MS);
  } catch (error) {
    if (seq === state.pollSeq) showError(error);
  }
}

function showProgress({ status, total = 0, processed = 0, error = 0, processing = 0 }) {
  showCatalogStatus(status, total);
  const catalog = state.catalogs.find((c) => c.id === state.catalogId);
  if (catalog) {
    catalog.status = status;
    catalog.productCount = total;
  }
  const pct = (n) => (total > 0 ? (100 * n) / total : 0);
  const bar = $("progress-bar");
  bar.querySelector(".processed").style.width = `${pct(processed)}%`;
  bar.querySelector(".error").style.width = `${pct(error)}%`;
  bar.querySelector(".processing").style.width = `${pct(processing)}%`;
  const done = Math.round(pct(processed + error));
  bar.setAttribute("aria-valuenow", String(done));
  bar.setAttribute("aria-valuetext", `${processed} processed, ${error} error, ${processing} processing of ${total}`);
  $("count-processed").textContent = String(processed);
  $("count-error").textContent = String(error);
  $("count-processing").textContent = String(processing);
}

// ---- filters ---------------------------------------------------------------------------------

function addFilterRow(field = "", operator = "eq", value = "") {
  const template = $("filter-row");
  const row = template.content.firstElementChild.cloneNode(true);
  row.querySelector(".f-field").value = field;
  row.querySelector(".f-op").value = operator;
  row.querySelector(".f-value").value = value;
  row.querySelector(".f-remove").addEventListener("click", () => {
    row.remove();
    refreshAfterChange();
  });
  $("filter-rows").append(row);
  row.querySelector(".f-field").focus();
}

/** A typed value: JSON when it parses (numbers, booleans, quoted strings), else the text itself. */
function parseValue(text) {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
}

function readFilters() {
  const filters = [];
  for (const row of $("filter-rows").querySelectorAll(".filter-row")) {
    const field = row.querySelector(".f-field").value.trim();
    const operator = row.querySelector(".f-op").value;
    const text = row.querySelector(".f-value").value;
    // A row applies once it is complete: a field, and a value unless the operator is exists.
    if (field === "" || !OPERATORS.has(operator) || (operator !== "exists" && text.trim() === "")) continue;
    let value;
    if (operator === "in" || operator === "nin") {
      value = text.split(",").map((item) => item.trim()).filter((item) => item !== "").map(parseValue);
    } else if (operator === "exists") {
      value = text.trim() === "" ? true : parseValue(text);
    } else {
      value = parseValue(text);
    }
    filters.push({ field, operator, value });
  }
  return filters;
}

// ---- search and recommendations --------------------------------------------------------------

function searchRequest() {
  const filters = readFilters();
  return {
    organizationId: state.org,
    catalogId: state.catalogId,
    query: $("query").value,
    topK: Number($("topk").value) || 12,
    visual_weight: Number($("visual-weight").value),
    similarity_threshold: Number($("threshold").value),
    ...(filters.length ? { filters } : {}),
  };
}

async function runSearch() {
  if (!state.catalogId) return;
  const seq = ++state.searchSeq;
  const grid = $("results");
  grid.setAttribute("aria-busy", "true");
  showMessage("Searching…");
  try {
    const request = searchRequest();
    const started = performance.now();
    const response = await api("POST", "/search", request);
    if (seq !== state.searchSeq) return;
    const results = response?.results ?? [];
    state.searched = true;
    renderGrid(grid, results);
    const ms = Math.round(performance.now() - started);
    $("results-summary").textContent =
      `${results.length} result${results.length === 1 ? "" : "s"} for “${request.query}” ` +
      `(visual weight ${request.visual_weight.toFixed(2)}, threshold ${request.similarity_threshold.toFixed(2)}` +
      `${request.filters ? `, ${request.filters.length} filter${request.filters.length === 1 ? "" : "s"}` : ""}) in ${ms} ms`;
    showMessage("");
  } catch (error) {
    if (seq === state.searchSeq) showError(error);
  } finally {
    if (seq === state.searchSeq) grid.removeAttribute("aria-busy");
  }
}

async function showRecs(productId) {
  const seq = ++state.recsSeq;
  const panel = $("recs-panel");
  const grid = $("recs");
  panel.hidden = false;
  $("recs-heading").textContent = `Similar to ${productId}`;
  $("recs-summary").textContent = "Loading…";
  grid.replaceChildren();
  grid.setAttribute("aria-busy", "true");
  $("recs-heading").focus();
  panel.scrollIntoView({ block: "nearest" });
  try {
    const filters = $("filters-for-recs").checked ? readFilters() : [];
    const response = await api("POST", "/recs", {
      organizationId: state.org,
      catalogId: state.catalogId,
      productId,
      topK: Number($("topk").value) || 12,
      visualWeight: Number($("visual-weight").value),
      ...(filters.length ? { filters } : {}),
    });
    if (seq !== state.recsSeq) return;
    const results = response?.results ?? [];
    renderGrid(grid, results);
    $("recs-summary").textContent = `${results.length} product${results.length === 1 ? "" : "s"} like ${productId}.`;
  } catch (error) {
    if (seq !== state.recsSeq) return;
    $("recs-summary").textContent = "";
    showError(error);
  } finally {
    if (seq === state.recsSeq) grid.removeAttribute("aria-busy");
  }
}

function closeRecs() {
  state.recsSeq++;
  $("recs-panel").hidden = true;
  $("recs").replaceChildren();
}

/** Re-runs the last search when a setting changes, so the effect shows at once. */
function refreshAfterChange() {
  if (state.searched) void runSearch();
}

// ---- result cards ----------------------------------------------------------------------------

function renderGrid(grid, results) {
  grid.replaceChildren(...results.map((result, index) => card(result, index + 1)));
}

function card(result, rank) {
  const productId = String(result.productId);
  const image = el("img", { alt: productId, loading: "lazy", decoding: "async" });
  const title = el("span", { className: "title" }, productId);
  const descriptor = el("span", { className: "descriptor" });
  const open = el(
    "button",
    { type: "button", className: "open", title: `Show products similar to ${productId}` },
    el("span", { className: "frame" }, image),
    title,
    descriptor,
  );
  open.addEventListener("click", () => void showRecs(productId));

  const metadata = el("dl", { className: "metadata" });
  for (const [key, value] of Object.entries(result.metadata ?? {})) {
    metadata.append(el("div", {}, el("dt", {}, key), el("dd", {}, formatValue(value))));
  }
  const score = typeof result.score === "number" ? result.score.toFixed(3) : "–";
  const item = el(
    "li",
    { className: "card", "data-product-id": productId, "data-rank": rank },
    el("span", { className: "rank" }, el("span", { className: "visually-hidden" }, `Rank ${rank}`), el("span", { "aria-hidden": "true" }, `#${rank}`)),
    open,
    el("p", { className: "score" }, "score ", el("b", {}, score)),
    metadata,
  );

  product(productId).then(
    (details) => {
      if (details?.objectUrl) image.src = details.objectUrl;
      else item.classList.add("no-image");
      if (details?.descriptor) {
        image.alt = details.descriptor;
        descriptor.textContent = details.descriptor;
      }
    },
    () => item.classList.add("no-image"),
  );
  return item;
}

// ---- wiring ----------------------------------------------------------------------------------

function bindOutput(inputId, outputId, digits) {
  const input = $(inputId);
  const output = $(outputId);
  const show = () => (output.textContent = Number(input.value).toFixed(digits));
  input.addEventListener("input", show);
  input.addEventListener("change", refreshAfterChange);
  show();
}

function start() {
  $("org").value = localStorage.getItem(ORG_STORAGE) ?? "";
  $("key").value = sessionStorage.getItem(KEY_STORAGE) ?? "";
  $("connect").addEventListener("submit", (event) => {
    event.preventDefault();
    void loadCatalogs();
  });
  $("catalog").addEventListener("change", (event) => selectCatalog(event.target.value));
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    void runSearch();
  });
  bindOutput("visual-weight", "visual-weight-value", 2);
  bindOutput("threshold", "threshold-value", 2);
  $("add-filter").addEventListener("click", () => addFilterRow());
  // A filter applies when its row is complete: on change of any of its inputs.
  $("filter-rows").addEventListener("change", refreshAfterChange);
  $("close-recs").addEventListener("click", closeRecs);
  if ($("org").value && $("key").value) void loadCatalogs();
}

start();
