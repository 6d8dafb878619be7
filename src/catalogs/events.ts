/** What the catalog core tells the rest of the service after a change has committed. */
export interface CatalogEvents {
  /** Products were queued for processing (so local workers can start at once). */
  productsQueued(): void;
  /**
   * A committed change affects what search returns from the catalog (products replaced, deleted
   * or re-ranked, the catalog deleted). Resolves once search reflects it; never rejects, because
   * the change itself is durable and queued for the index either way.
   */
  searchableChanged(catalogId: string): Promise<void>;
}

export const NO_CATALOG_EVENTS: CatalogEvents = {
  productsQueued: () => undefined,
  searchableChanged: async () => undefined,
};
