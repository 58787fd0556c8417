export function serveOpenApi(_path: string, _accept: string | undefined): { status: number; body: unknown } | undefined {
  return undefined;
}
