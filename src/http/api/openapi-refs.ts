// The named answer schemas as the OpenAPI document holds them: components.schemas built from the
// registry of openapi-responses*.ts, and a response object that refers to one by name.
import { z } from 'zod';
import { responses } from './openapi-responses';
import './openapi-responses-tenancy';

const PREFIX = '#/components/schemas/';

/** Every named answer schema as JSON Schema (2020-12, what OpenAPI 3.1 takes), refs between them by name. */
export function responseSchemas(): Record<string, unknown> {
  const { schemas } = z.toJSONSchema(responses, { uri: (id) => `${PREFIX}${id}`, io: 'output', unrepresentable: 'any' });
  // A component is named by its key; $schema and $id would only repeat the document's own.
  return Object.fromEntries(Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...rest }]) => [id, rest]));
}

/** `{ [code]: { description, content } }` for an answer described by a named schema. */
export function answer(code: string, description: string, schema?: z.ZodType): Record<string, unknown> {
  if (!schema) return { [code]: { description } };
  const id = responses.get(schema)?.id;
  if (!id) throw new Error(`the answer schema of "${description}" is not named in openapi-responses*.ts`);
  return { [code]: { description, content: { 'application/json': { schema: { $ref: `${PREFIX}${id}` } } } } };
}
