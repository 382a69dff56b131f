import { Type } from 'typebox';

export const VouchParams = Type.Object({ target_agent_id: Type.String({ maxLength: 64 }) });
export const VouchBody = Type.Object({
  skill: Type.String({ minLength: 1, maxLength: 64, description: 'A skill the target lists in its passport (exact label)' }),
});
