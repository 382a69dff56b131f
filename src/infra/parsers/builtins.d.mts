/** Runs `load` (module imports) and restores every built-in method it replaced (see builtins.mjs). */
export function keepBuiltins<T>(load: () => Promise<T>): Promise<T>;
