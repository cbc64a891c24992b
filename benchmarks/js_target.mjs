// The JS target's timings for benchmarks/js_target.py: argv = module path, calls per round,
// rounds; stdin = JSON {t, y}. Prints the medians (seconds per call) of project,
// projectAndPrivatize (B = 1) and privatize of one row, with OS entropy.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [path, calls, rounds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const m = await import(pathToFileURL(path).href);
const { t, y } = JSON.parse(readFileSync(0, "utf8"));
const source = m.sourceOS(), c = m.project(t, y);

function median(f) {
    f();
    const times = [];
    for (let r = 0; r < rounds; r++) {
        const start = performance.now();
        for (let i = 0; i < calls; i++) f();
        times.push((performance.now() - start) / calls / 1e3);
    }
    return times.sort((a, b) => a - b)[Math.floor(rounds / 2)];
}

console.log([median(() => m.project(t, y)),
             median(() => m.projectAndPrivatize(t, y, "epsilon", 1.0, 0, source)),
             median(() => m.privatize(c, 1, "epsilon", 1.0, 0, source))].join(" "));
