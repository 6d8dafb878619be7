// One expensive resource per key per process (a model, a 100 MB vocabulary), shared by every
// caller that opens it and released when the last of them closes. A failed load is forgotten so
// the next open retries instead of replaying the error forever.

export interface Lease<T> {
  value: T;
  /** Idempotent; the resource is disposed when no lease is left. */
  release(): Promise<void>;
}

interface Entry<T> {
  value: Promise<T>;
  leases: number;
}

export class SharedResource<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly load: (key: string) => Promise<T>,
    private readonly dispose: (value: T) => void | Promise<void> = () => undefined,
  ) {}

  async acquire(key: string): Promise<Lease<T>> {
    let entry = this.entries.get(key);
    if (!entry) {
      const created: Entry<T> = { value: this.load(key), leases: 0 };
      created.value.catch(() => {
        if (this.entries.get(key) === created) this.entries.delete(key);
      });
      this.entries.set(key, created);
      entry = created;
    }
    entry.leases++;
    let value: T;
    try {
      value = await entry.value;
    } catch (err) {
      entry.leases--;
      throw err;
    }
    const held = entry;
    let released = false;
    return {
      value,
      release: async () => {
        if (released) return;
        released = true;
        held.leases--;
        if (held.leases === 0 && this.entries.get(key) === held) {
          this.entries.delete(key);
          await this.dispose(value);
        }
      },
    };
  }
}
