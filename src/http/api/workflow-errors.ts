// Workflow refusals reach HTTP handlers as TerminalErrors with a code. Map the ones that are
// the caller's doing to 4xx (not found, wrong state, cancelled) so they are not reported as
// server errors; anything else stays a 500.
import { AppError } from '../../errors';

const CONFLICTS = new Set(['ERR_ROLLOUT_IN_PROGRESS', 'ERR_ROLLOUT_STATE', 'ERR_DEPLOYMENT_STATE_CONFLICT', 'ERR_ENGINE_CANCELLED']);

export async function asHttp<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = (err as { code?: string }).code ?? '';
    const message = (err as Error).message;
    if (CONFLICTS.has(code)) throw new AppError(code, 409, message);
    if (code.endsWith('_NOT_FOUND')) throw new AppError(code, 404, message);
    throw err;
  }
}
