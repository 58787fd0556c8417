// The page's only way to ctrl: fetch against /v1 with the admin token as a bearer header.
// Failures keep the API's own words (code, message, per-field details) so the page can show
// them as the API put them.

export interface ErrorDetail {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    /** HTTP status; 0 when ctrl could not be reached at all. */
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Reads the API's error body; anything else (a proxy's page, say) is described by its status. */
export function errorFromResponse(status: number, statusText: string, body: unknown): ApiError {
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  if (e && typeof e.message === 'string') {
    const details = Array.isArray(e.details) ? (e.details as ErrorDetail[]).filter((d) => d && typeof d.field === 'string') : [];
    return new ApiError(status, typeof e.code === 'string' ? e.code : 'ERR_UNKNOWN', e.message, details);
  }
  return new ApiError(status, 'ERR_UNKNOWN', `HTTP ${status}${statusText ? ` ${statusText}` : ''}`);
}

export type Api = <T>(path: string, init?: { method?: string; body?: unknown }) => Promise<T>;

export function createApi(token: string, fetchImpl: typeof fetch = (...a) => fetch(...a)): Api {
  return async <T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetchImpl(path, {
        method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
        headers,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        // The token is ours to send; nothing of the page's state belongs in a cache.
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (err) {
      throw new ApiError(0, 'ERR_WEB_UNREACHABLE', `ctrl could not be reached (${err instanceof Error ? err.message : String(err)})`);
    }
    const text = await res.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // Not JSON: described by its status below.
    }
    if (!res.ok) throw errorFromResponse(res.status, res.statusText, body);
    return body as T;
  };
}
