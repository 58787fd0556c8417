// The admin token lives in sessionStorage only: gone when the tab closes, never in a URL, a
// cookie (nothing sends it implicitly) or localStorage (it would outlive the session).
const KEY = 'unkey-infra.adminToken';

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
