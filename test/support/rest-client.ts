/** A thin fetch wrapper that keeps tests readable: status, parsed body, headers. */
export interface RestResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export function restClient(baseUrl: string, apiKey: string | undefined) {
  async function call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<RestResponse<T>> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (apiKey !== undefined) (init.headers as Record<string, string>)["SERVICE_API_KEY"] = apiKey;
    if (body !== undefined) {
      (init.headers as Record<string, string>)["content-type"] ??= "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    const response = await fetch(baseUrl + path, init);
    const text = await response.text();
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
  }
  return {
    call,
    get: <T = any>(path: string) => call<T>("GET", path),
    post: <T = any>(path: string, body?: unknown) => call<T>("POST", path, body),
    put: <T = any>(path: string, body?: unknown) => call<T>("PUT", path, body),
    delete: <T = any>(path: string, body?: unknown) => call<T>("DELETE", path, body),
  };
}

export type RestClient = ReturnType<typeof restClient>;

/** The documented Error object: exactly these five fields. */
export function expectErrorObject(response: RestResponse, status: number, method: string, url: string): void {
  const { body } = response;
  if (response.status !== status) {
    throw new Error(`expected HTTP ${status}, got ${response.status}: ${JSON.stringify(body)}`);
  }
  const keys = Object.keys(body ?? {}).sort();
  if (JSON.stringify(keys) !== JSON.stringify(["message", "method", "status", "time", "url"])) {
    throw new Error(`Error object has fields ${keys.join(",")}`);
  }
  if (body.status !== status || body.method !== method || body.url !== url) {
    throw new Error(`Error object mismatch: ${JSON.stringify(body)}`);
  }
  if (typeof body.message !== "string" || body.message.length === 0) throw new Error("Error object has no message");
  if (Number.isNaN(Date.parse(body.time)) || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(body.time)) {
    throw new Error(`Error object time is not RFC 3339: ${body.time}`);
  }
}
