// The JS runtime (gpcompiler/runtime/js/gp_runtime.mjs) as a module for the tests: its text
// exports nothing (it is inlined into every generated NAME.mjs), so its functions are
// exported here: its text, after an optional prefix, with an export list appended, is
// written to a temporary file and imported.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const RUNTIME_PATH = new URL("../../gpcompiler/runtime/js/gp_runtime.mjs", import.meta.url);
export const NAMES = [
    "GpError", "GP_FAST", "GP_LIB_CHECKS", "gpSelfTest", "gpUlps", "gpXofAbsorb", "gpXofWord",
    "gpWord", "gpWordBig", "gpSourceKey", "gpSourceOS", "gpSourceCallback", "gpParseKey",
    "gpScaleEpsilon", "gpScaleRho", "gpLattice", "gpClipRows", "gpGaussian", "gpSphericalLaplace",
    "gpPrec", "gpLn", "gpLn2", "gpPi", "gpSincosTurn", "gpLdexp", "gpRint", "gpNext",
    "gpMantissa", "gpCeilProduct", "gpCompareProducts"];

const directory = mkdtempSync(join(tmpdir(), "gp-runtime-"));
let loads = 0;

/** The runtime's text with `prefix` before it (e.g. a replaced Math), imported afresh; or
 * another file of gpcompiler/runtime/js and the names to export from it. */
export async function loadRuntime(prefix = "", path = RUNTIME_PATH, names = NAMES) {
    const text = `${prefix}\n${readFileSync(path, "utf8")}\nexport { ${names.join(", ")} };\n`;
    const file = join(directory, `runtime-${loads++}.mjs`);
    writeFileSync(file, text);
    return import(pathToFileURL(file).href);
}
