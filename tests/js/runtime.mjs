// The JS runtime (gpcompiler/runtime/js/gp_runtime.mjs) as a module for the tests: its text
// exports nothing (it is inlined into every generated NAME.mjs), so its functions are
// exported here by appending an export list and importing the text as a data: URL.
import { readFileSync } from "node:fs";

export const RUNTIME_PATH = new URL("../../gpcompiler/runtime/js/gp_runtime.mjs", import.meta.url);
export const NAMES = [
    "GpError", "GP_FAST", "GP_LIB_CHECKS", "gpSelfTest", "gpUlps", "gpXofAbsorb", "gpXofWord",
    "gpWord", "gpWordBig", "gpSourceKey", "gpSourceOS", "gpSourceCallback", "gpParseKey",
    "gpScaleEpsilon", "gpScaleRho", "gpLattice", "gpClipRows", "gpGaussian", "gpSphericalLaplace",
    "gpPrec", "gpLn", "gpLn2", "gpPi", "gpSincosTurn", "gpIvLn", "gpIvAngle", "gpLdexp", "gpRint",
    "gpNext", "gpMantissa"];

/** The runtime's text with `prefix` before it (e.g. a replaced Math), imported afresh. */
export async function loadRuntime(prefix = "") {
    const text = `${prefix}\n${readFileSync(RUNTIME_PATH, "utf8")}\nexport { ${NAMES.join(", ")} };\n`;
    return import(`data:text/javascript;base64,${Buffer.from(text).toString("base64")}`);
}
