// The privatize page (docs/reference/browser.md): the curve is read, privatized and drawn
// in this page; nothing is sent (its Content-Security-Policy forbids every connection).
// The mechanisms are the shipped JS modules (generated/js/), inlined before this script;
// each registers its API in globalThis.gpcompilerModules.

const MODULES = globalThis.gpcompilerModules;
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

/** Python's repr of a float: the shortest round-trip digits (as JavaScript's), in
 * fixed notation for decimal exponents -4..15 (with ".0" for integers), else d.ddde+XX. */
export function pythonRepr(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = x.toExponential().split("e");
  const e = Number(exp);
  const sign = mantissa[0] === "-" ? "-" : "";
  const digits = mantissa.replace(/[-.]/g, "");
  if (e < -4 || e >= 16) {
    const rest = digits.length > 1 ? "." + digits.slice(1) : "";
    return `${sign}${digits[0]}${rest}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  return `${sign}${whole}.${digits.slice(e + 1) || "0"}`;
}

/** Python's json.dumps of numbers (floats), strings (ASCII, escaped), arrays and objects. */
export function pythonJson(value) {
  if (typeof value === "number") return pythonRepr(value);
  if (typeof value === "string") {
    return JSON.stringify(value).replace(/[\u007f-\uffff]/g,
      (ch) => "\\u" + ch.charCodeAt(0).toString(16).padStart(4, "0"));
  }
  if (value === null) return "null";
  if (Array.isArray(value) || ArrayBuffer.isView(value)) {
    return "[" + Array.from(value, pythonJson).join(", ") + "]";
  }
  return "{" + Object.entries(value).map(([k, v]) => `${pythonJson(k)}: ${pythonJson(v)}`)
    .join(", ") + "}";
}

// ---- reading a curves CSV as `gpcompiler privatize` does (gpcompiler/io/curves.py)

const FLOAT = /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;

/** A field as Python's float() reads it (NaN for inf/nan: they are refused), else null. */
export function pythonFloat(text) {
  const s = text.trim();
  if (FLOAT.test(s)) return Number(s.replaceAll("_", ""));
  return SPECIAL.test(s) ? NaN : null;
}

/** The fields of one line as Python's csv.reader reads them, or null when a quote is not
 * closed. */
function csvFields(line) {
  const fields = [];
  let field = "", quoted = false, started = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch !== '"') field += ch;
      else if (line[i + 1] === '"') { field += '"'; i++; }
      else quoted = false;
    } else if (ch === ",") { fields.push(field); field = ""; started = false; }
    else if (ch === '"' && !started) { quoted = true; started = true; }
    else { field += ch; started = true; }
  }
  if (quoted) return null;
  fields.push(field);
  return fields;
}

const LINE_BREAKS = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

/** The curves of a CSV text: {ids, times[], values[] (samples x n, C order), names}.
 * Errors name the line, as the command line's do; nothing is released from a bad file. */
export function parseCurves(text, source) {
  const rows = [];
  text.split(LINE_BREAKS).forEach((line, i) => {
    if (line === "") return;
    const fields = csvFields(line);
    if (fields === null) throw new Error(`${source}: line ${i + 1} is not CSV text (a quote is not closed)`);
    if (!fields[0].trimStart().startsWith("#")) rows.push([i + 1, fields]);
  });
  if (rows.length === 0) throw new Error(`${source}: empty file (no header and no data)`);
  const header = rows[0][1].map((h) => h.trim());
  const idColumn = ["curve", "id"].includes(header[0].toLowerCase());
  const names = idColumn ? header.slice(1) : header;
  if (names.length < 2 || !["t", "time"].includes(names[0].toLowerCase())) {
    throw new Error(`${source}: header must be t,y1[,y2...] (or time,...) optionally ` +
                    `preceded by curve or id, got ${header.join(",")}`);
  }
  const groups = new Map();
  for (const [number, row] of rows.slice(1)) {
    if (row.length !== header.length) {
      throw new Error(`${source}: line ${number} has ${row.length} fields, expected ${header.length}`);
    }
    const key = idColumn ? row[0] : "curve";
    const numbers = (idColumn ? row.slice(1) : row).map((field, j) => {
      const x = pythonFloat(field);
      if (x === null) throw new Error(`${source}: line ${number}: ${names[j]}='${field}' is not a number`);
      if (!Number.isFinite(x)) throw new Error(`${source}: line ${number} has a NaN or infinite value`);
      return x;
    });
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(numbers);
  }
  if (groups.size === 0) throw new Error(`${source}: no data rows (a header and nothing else)`);
  const curves = { ids: [...groups.keys()], times: [], values: [], names: names.slice(1) };
  for (const [key, samples] of groups) {
    if (samples.some((s, i) => i > 0 && s[0] < samples[i - 1][0])) {
      throw new Error(`${source}: curve '${key}': sample times must be non-decreasing ` +
                      "(a repeated time is a jump)");
    }
    curves.times.push(Float64Array.from(samples, (s) => s[0]));
    curves.values.push(Float64Array.from(samples.flatMap((s) => s.slice(1))));
  }
  return curves;
}

/** A file's text: UTF-8 (a byte-order mark dropped), gunzipped first if it is gzip. */
async function readFile(file) {
  let bytes = new Uint8Array(await file.arrayBuffer());
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new Error(`${file.name}: not a UTF-8 CSV file (or a gzip of one)`);
  }
}

// ---- the release

/** numpy.linspace(a, b, n): a + i (b - a)/(n - 1), the last point b. */
export function linspace(a, b, n) {
  const step = (b - a) / (n - 1);
  return Float64Array.from({ length: n }, (_, i) => (i === n - 1 ? b : i * step + a));
}

/** The public grid of the release: points over the spec's curve interval. */
export function gridOf(module, points) {
  const [a, b] = module.CURVE_INTERVAL;
  if (!(Number.isFinite(a) && Number.isFinite(b))) {
    throw new Error(`the curve domain [${a}, ${b}] of ${module.NAME} is unbounded`);
  }
  return linspace(a, b, points);
}

/** Every curve projected and privatized (rows 0, 1, ... of the source, in file order). */
export function release(module, curves, budget, value, source) {
  const facts = module.releaseFacts(budget, value, 0);
  return curves.ids.map((id, i) => {
    try {
      return module.projectAndPrivatize(curves.times[i], curves.values[i], budget, value,
                                        facts.bound, source);
    } catch (error) {
      throw new Error(`curve '${id}': ${error.message}`);
    }
  });
}

/** A release under this browser's ledger (docs/reference/ledger.md, "Releases over days"):
 * with a cap, the same curves, spec, budget, grid and randomness return the stored
 * coefficients, charged nothing (after the cap check: with the cap spent they are refused
 * too); else the release is drawn and charged (one record: count curves at the budget, the
 * cap counting each). */
export function releaseOnLedger(ledger, module, curves, budget, value, points, source, keyed) {
  const model = budget === "epsilon" ? "GP" : "CGP";
  const memo = module.ledgerKey({
    spec_sha256: module.SPEC_SHA256, model, budget: pythonRepr(value), grid: String(points),
    randomness: keyed ? module.ledgerKey(keyed) : "crypto.getRandomValues",
    names: curves.names, ids: curves.ids,
    data: curves.ids.map((_, i) => module.curveDigest(curves.times[i], curves.values[i])),
  });
  return ledger.release(memo, model, value, () => {
    const coefficients = release(module, curves, budget, value, source);
    const facts = module.releaseFacts(budget, value, 0);
    return { release: coefficients.map((c) => Array.from(c)),
             lines: [module.ledgerRecord(budget, value, facts.bound, curves.ids.length,
                                         `privatize ${module.NAME} --method project (page)`)] };
  }, curves.ids.length);
}

/** The released coefficients and their functions on the grid. */
export function released(module, budget, value, grid, coefficients) {
  const c = coefficients.map((row) => Float64Array.from(row));
  return { facts: module.releaseFacts(budget, value, 0), grid, coefficients: c,
           values: c.map((row) => module.evaluate(row, grid)) };
}

/** The metadata of `gpcompiler privatize -o release.csv` (docs/howto/read-a-release.md). */
function metadata(module, budget, value, facts, keyed) {
  const units = {};
  if (module.DOMAIN_UNITS != null) units.domain = module.DOMAIN_UNITS;
  if (module.VALUE_UNITS != null) units.values = module.VALUE_UNITS;
  return {
    gpcompiler: module.TOOL_VERSION, spec: module.NAME, spec_sha256: module.SPEC_SHA256,
    ...(module.PARAMETERS === undefined ? {} : { parameters: module.PARAMETERS }),
    bound: facts.bound, slack: facts.slack, lattice: facts.gamma,
    ...(Object.keys(units).length ? { units } : {}),
    method: "project", budget: { [budget]: value },
    ...(keyed ? { randomness: "keyed (not private: whoever holds the key can subtract the noise)" } : {}),
  };
}

/** The release as CSV: `#` metadata lines, then curve,t,<values> per grid point. */
export function releaseCsv(module, curves, result, budget, value, keyed) {
  const head = { ...metadata(module, budget, value, result.facts, keyed),
                 grid: `${result.grid.length} points over the curve domain` };
  const lines = Object.entries(head).map(([k, v]) => `# ${k}: ${pythonJson(v)}`);
  lines.push(["curve", "t", ...curves.names].join(","));
  const n = module.VALUE_DIM;
  curves.ids.forEach((id, i) => result.grid.forEach((t, g) => {
    const v = Array.from(result.values[i].subarray(g * n, (g + 1) * n), pythonRepr);
    lines.push([id, pythonRepr(t), ...v].join(","));
  }));
  return lines.join("\n") + "\n";
}

/** The release as JSON, as `gpcompiler privatize -o release.json`: with the coefficients. */
export function releaseJson(module, curves, result, budget, value, keyed) {
  const n = module.VALUE_DIM;
  return pythonJson({
    ...metadata(module, budget, value, result.facts, keyed), value_names: curves.names,
    curves: curves.ids.map((id, i) => ({
      curve: id, coefficients: result.coefficients[i], grid: result.grid,
      values: Array.from(result.grid, (_, g) => result.values[i].subarray(g * n, (g + 1) * n)),
    })),
  }) + "\n";
}

// ---- the plot: the curve's samples and the release, one line per value component

function ticks(lo, hi, count) {
  const raw = (hi - lo) / count, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw);
  const first = Math.ceil(lo / step) * step;
  return Array.from({ length: Math.floor((hi - first) / step + 1e-9) + 1 },
                    (_, i) => +(first + i * step).toPrecision(12));
}

function node(parent, name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) element.setAttribute(k, v);
  if (text !== undefined) element.textContent = text;
  parent.append(element);
  return element;
}

function extent(arrays) {
  let lo = Infinity, hi = -Infinity;
  for (const a of arrays) for (const x of a) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
  if (lo === hi) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.04;
  return [lo - pad, hi + pad];
}

function component(values, n, k) {
  return values.filter((_, i) => i % n === k);
}

/** Draw curve i of ``curves`` and its release on the SVG, axes labelled with units. */
function plot(svg, module, curves, result, i, labels) {
  svg.replaceChildren();
  const narrow = svg.clientWidth > 0 && svg.clientWidth < 600;
  const [W, H] = narrow ? [560, 520] : [860, 440];
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const top = narrow ? 20 + 26 * (module.VALUE_DIM > 1 ? 3 : 2) : 36;  // below the legend
  const box = { left: narrow ? 96 : 78, right: W - 28, top, bottom: H - (narrow ? 74 : 56) };
  const n = module.VALUE_DIM, t = curves.times[i], grid = result.grid;
  const series = [];
  for (let k = 0; k < n; k++) {
    series.push([grid, component(result.values[i], n, k), k ? "release2" : "release"]);
    series.push([t, component(curves.values[i], n, k), k ? "curve2" : "curve"]);  // on top
  }
  const [x0, x1] = [Math.min(grid[0], ...t), Math.max(grid[grid.length - 1], ...t)];
  const [y0, y1] = extent(series.map((s) => s[1]));
  const X = (x) => box.left + (x - x0) / (x1 - x0) * (box.right - box.left);
  const Y = (y) => box.bottom - (y - y0) / (y1 - y0) * (box.bottom - box.top);
  for (const x of ticks(x0, x1, narrow ? 4 : 8)) {
    node(svg, "line", { class: "grid", x1: X(x), x2: X(x), y1: box.top, y2: box.bottom });
    node(svg, "text", { x: X(x), y: box.bottom + 20, "text-anchor": "middle" }, x);
  }
  for (const y of ticks(y0, y1, 6)) {
    node(svg, "line", { class: "grid", x1: box.left, x2: box.right, y1: Y(y), y2: Y(y) });
    node(svg, "text", { x: box.left - 6, y: Y(y) + 4, "text-anchor": "end" }, y);
  }
  node(svg, "rect", { class: "axis", fill: "none", x: box.left, y: box.top,
                      width: box.right - box.left, height: box.bottom - box.top });
  node(svg, "text", { x: (box.left + box.right) / 2, y: H - 10, "text-anchor": "middle" },
       labels.time);
  node(svg, "text", { x: 16, y: (box.top + box.bottom) / 2, "text-anchor": "middle",
                      transform: `rotate(-90 16 ${(box.top + box.bottom) / 2})` }, labels.value);
  for (const [xs, ys, style] of series) {
    const points = Array.from(xs, (x, j) => `${X(x).toFixed(2)},${Y(ys[j]).toFixed(2)}`);
    node(svg, "polyline", { class: style, points: points.join(" ") });
  }
  const legend = [["curve", `${curves.ids[i]}: your samples (never sent)`],
                  ["release", "the release (what a download holds)"]];
  if (n > 1) legend.push(["curve2", `dashed: ${curves.names[1]}${n > 2 ? ", ..." : ""}`]);
  legend.forEach(([style, text], j) => {
    const [x, y] = narrow ? [box.left, 20 + 26 * j] : [box.left + 300 * j, 18];
    node(svg, "line", { class: style, x1: x, x2: x + 24, y1: y, y2: y });
    node(svg, "text", { x: x + 30, y: y + 5 }, text);
  });
}

/** Axis labels: the CSV's column names with the spec's declared units (the bundled ECG's
 * own labels when it is the curve). */
function axisLabels(module, curves, bundled) {
  if (bundled) return { time: bundled.time, value: bundled.value };
  const unit = (u) => (u == null ? "" : ` (${u})`);
  return { time: `t${unit(module.DOMAIN_UNITS)}`,
           value: curves.names.join(", ") + unit(module.VALUE_UNITS) };
}

// ---- the page

function showFacts(module, budget, value, facts, keyed) {
  const rows = [
    ["spec", `${module.NAME}: ${module.TITLE}`],
    ["budget", `${budget === "epsilon" ? "ε" : "ρ"} = ${value} (${budget === "epsilon" ? "GP" : "CGP"})`],
    ["noise scale", `${facts.scale} (rounded up exactly)`],
    ["bound B", `${facts.bound} (the curve is clipped to it)`],
    ["slack 2ηB", `${facts.slack.toPrecision(3)} (float error of the projection)`],
    ["lattice step γ", `${facts.gamma} (every released coefficient is a multiple of it)`],
    ["randomness", keyed ? "the testing key (not private)" : "crypto.getRandomValues (this device)"],
  ];
  $("facts").replaceChildren(...rows.flatMap(([term, text]) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = term;
    dd.textContent = text;
    return [dt, dd];
  }));
}

function offer(link, text, type, name) {
  if (link.href) URL.revokeObjectURL(link.href);
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  link.hidden = false;
}

function bundledEcg() {
  const data = $("ecg");
  return { text: data.textContent.trim(), time: data.dataset.timeLabel, value: data.dataset.valueLabel };
}

let shown = null;  // the plot's arguments, drawn again when the page changes width

const anyModule = () => MODULES[Object.keys(MODULES).sort()[0]];

/** This browser's ledger (localStorage), with the cap of the form (empty: none). */
function browserLedger() {
  const text = $("cap").value.trim(), cap = text === "" ? null : pythonFloat(text);
  if (cap !== null && !(cap > 0 && Number.isFinite(cap))) {
    throw new Error("the cap must be a positive number (or empty: no cap)");
  }
  const module = anyModule();
  return new module.DeviceLedger(module.browserStorage(), { cap });
}

/** The ledger's exact totals per UTC day, newest first, each named by its specs. */
function showLedger() {
  const module = anyModule(), specs = {};
  for (const m of Object.values(MODULES)) (specs[m.METRIC_SHA256] ??= []).push(m.NAME);
  let days;
  try {
    days = new module.DeviceLedger(module.browserStorage()).totals("day").reverse();
  } catch (error) {
    $("ledger-empty").hidden = false;
    $("ledger-empty").textContent = error.message;
    return;
  }
  $("ledger-empty").hidden = days.length > 0;
  $("ledger-days").tBodies[0].replaceChildren(...days.map((day) => {
    const row = document.createElement("tr");
    Object.assign(row.dataset, { epoch: day.epoch, model: day.model, metric: day.metric.sha256,
                                 total: day.cost });
    const [p, q = "1"] = day.cost.split("/"), near = Number(p) / Number(q);
    const unit = { GP: "ε per unit distance", CGP: "ρ per unit squared distance" }[day.model]
      ?? day.model;
    const names = (specs[day.metric.sha256] ?? ["?"]).join(", ");
    const approximately = Number.isFinite(near) && day.cost.includes("/")
      ? ` ≈ ${near.toPrecision(6)}` : "";
    const cells = [day.epoch,
                   `${day.model} over ${day.metric.name} (${names}): ${day.records} release` +
                   (day.records > 1 ? "s" : ""),
                   `${unit} ${day.cost}${approximately}`];
    row.replaceChildren(...cells.map((text) => {
      const cell = document.createElement("td");
      cell.textContent = text;
      return cell;
    }));
    return row;
  }));
}

async function run(event) {
  event?.preventDefault();
  const status = $("status");
  status.className = "";
  status.textContent = "privatizing…";
  try {
    const module = MODULES[$("spec").value];
    const budget = $("budget").value, value = pythonFloat($("value").value);
    const points = Number($("grid").value);
    if (!(value > 0 && Number.isFinite(value))) throw new Error("the budget must be a positive number");
    if (!(Number.isInteger(points) && points >= 2)) throw new Error("the grid needs at least 2 points");
    const ledger = browserLedger();
    const useFile = document.querySelector("input[name=source]:checked").value === "file";
    const file = $("file").files[0];
    if (useFile && !file) throw new Error("choose a CSV file first");
    const bundled = useFile ? null : bundledEcg();
    const curves = parseCurves(useFile ? await readFile(file) : bundled.text,
                               useFile ? file.name : "bundled:ecg");
    const grid = gridOf(module, points);
    const started = performance.now();
    const key = new URLSearchParams(location.search).get("key");
    const source = key ? module.sourceKey(module.parseKey(key), 0n) : module.sourceOS();
    const { release: coefficients, charged } = releaseOnLedger(
      ledger, module, curves, budget, value, points, source, key);
    const result = released(module, budget, value, grid, coefficients);
    const csv = releaseCsv(module, curves, result, budget, value, Boolean(key));
    shown = [module, curves, result, 0, axisLabels(module, curves, bundled)];
    plot($("plot"), ...shown);
    showFacts(module, budget, value, result.facts, Boolean(key));
    $("release").textContent = csv;
    offer($("download"), csv, "text/csv", `${module.NAME}_release.csv`);
    offer($("download-json"), releaseJson(module, curves, result, budget, value, Boolean(key)),
          "application/json", `${module.NAME}_release.json`);
    const plural = curves.ids.length > 1 ? "s" : "";
    status.textContent = (charged ? `released ${curves.ids.length} curve${plural} in ` +
      `${Math.round(performance.now() - started)} ms`
      : "the stored release of these curves (charged nothing)") +
      `; the plot shows ${curves.ids[0]}`;
    document.body.dataset.released = String(Number(document.body.dataset.released || 0) + 1);
  } catch (error) {
    status.className = "error";
    status.textContent = error.message;
    document.body.dataset.failed = error.message;
  }
  showLedger();
}

function init() {
  const select = $("spec");
  for (const name of Object.keys(MODULES).sort()) {
    const option = new Option(`${name}: ${MODULES[name].TITLE}`, name);
    select.append(option);
  }
  select.value = MODULES.sinc_ecg ? "sinc_ecg" : select.options[0].value;
  $("file").addEventListener("change", () => {
    document.querySelector("input[name=source][value=file]").checked = true;
  });
  $("keyed").hidden = !new URLSearchParams(location.search).get("key");
  $("controls").addEventListener("submit", run);
  showLedger();
  let wasNarrow = null;
  new ResizeObserver(([entry]) => {
    const narrow = entry.contentRect.width < 600;
    if (shown && narrow !== wasNarrow) plot($("plot"), ...shown);
    wasNarrow = narrow;
  }).observe($("plot"));
  document.body.dataset.ready = "true";
}

if (globalThis.document) init();  // Node imports this file to test its functions
