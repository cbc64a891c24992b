/* gpcompiler's JavaScript ledger (docs/reference/ledger.md): the records of format
 * gpcompiler-ledger/1 as the Python target writes them (records.py), read back and composed
 * exactly (BigInt rationals), and a budget across days on the device (device.py): a cap per
 * UTC epoch checked before any noise is drawn, and memoized re-release. Inlined verbatim
 * into every generated NAME.mjs after gp_protocol.mjs (whose gpRepr it uses); nothing here
 * is exported, the module's API is (docs/reference/js.md).
 *
 * Storage. A ledger keeps its records and its stored releases in a storage the caller
 * gives: { name, read() -> the JSON Lines text ("" when empty), append(text) (whole lines,
 * all or none), get(key) -> the stored release or null, put(key, value) }. Two ship:
 * gpFileStorage (Node: the file and its FILE.releases/ as Python's DeviceLedger writes
 * them) and gpBrowserStorage (localStorage). Every call is synchronous, so one release in
 * one JavaScript thread runs from the cap check to the append with nothing in between. */

const GP_LEDGER_FORMAT = "gpcompiler-ledger/1";
const GP_LEDGER_MODELS = ["GP", "CGP", "DP", "zCDP"];
const GP_LEDGER_REQUIRED = ["format", "release_id", "time", "label", "model", "metric", "spec",
    "cost", "delta", "parameter", "sensitivity", "noise", "lattice", "bound", "slack", "count"];
const GP_EPOCHS = ["day", "week"];

const gpLedgerFail = (message) => { throw new GpError("GP_ELEDGER", message); };

/* -- Exact rationals: [p, q] BigInts in lowest terms, q > 0 ------------------------------ */

function gpGcd(a, b) {
    while (b) [a, b] = [b, a % b];
    return a;
}

function gpRatio(p, q) {
    const g = gpGcd(p < 0n ? -p : p, q);
    return g > 1n ? [p / g, q / g] : [p, q];
}

const gpRatioAdd = ([p, q], [r, s]) => gpRatio(p * s + r * q, q * s);
const gpRatioCompare = ([p, q], [r, s]) => (p * s < r * q ? -1 : p * s > r * q ? 1 : 0);
const gpRatioText = ([p, q]) => (q === 1n ? `${p}` : `${p}/${q}`);

/* The exact value of a finite float (Python's Fraction(v)). */
function gpRationalOf(v) {
    if (v === 0)
        return [0n, 1n];
    const [m, e] = gpMantissa(v), signed = v < 0 ? -m : m;
    return e >= 0 ? [signed << BigInt(e), 1n] : gpRatio(signed, 1n << BigInt(-e));
}

/* A rational string as Python's Fraction(text) reads a record's: "p/q", an integer or a
 * decimal (with an exponent); anything else is an error. */
function gpRationalParse(text) {
    const fraction = /^\s*([+-]?\d+)\/(\d+)\s*$/.exec(text);
    if (fraction && BigInt(fraction[2]) > 0n)
        return gpRatio(BigInt(fraction[1]), BigInt(fraction[2]));
    const decimal = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
    if (!fraction && decimal && (decimal[2] || decimal[3])) {
        const digits = BigInt(`${decimal[1]}${decimal[2] || ""}${decimal[3] || ""}` || "0");
        const power = Number(decimal[4] || 0) - (decimal[3] || "").length;
        return power >= 0 ? [digits * 10n ** BigInt(power), 1n]
            : gpRatio(digits, 10n ** BigInt(-power));
    }
    return gpLedgerFail(`not a rational: ${JSON.stringify(text)}`);
}

/* A positive rational as the nearest float, near enough for a message (64 bits of it). */
function gpRatioNumber([p, q]) {
    const shift = BigInt(gpBitLength(q) - gpBitLength(p) + 64);
    return shift >= 0n ? Number((p << shift) / q) * 2 ** -Number(shift)
        : Number(p / (q << -shift)) * 2 ** Number(-shift);
}

/* Python's format(x, "g") (6 significant digits, trailing zeros dropped). */
function gpFormatG(x, precision = 6) {
    if (x === 0)
        return "0";
    const [, exponent] = x.toExponential(precision - 1).split("e");
    const e = Number(exponent), trim = (s) => (s.includes(".") ? s.replace(/\.?0+$/, "") : s);
    if (e < -4 || e >= precision) {
        const [mantissa] = x.toExponential(precision - 1).split("e");
        return `${trim(mantissa)}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    return trim(x.toFixed(precision - 1 - e));
}

/* -- SHA-256 (FIPS 180-4), synchronous: the same in Node and in browsers ---------------- */

const GP_SHA256_K = Uint32Array.from([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);

const gpRotr = (x, n) => (x >>> n) | (x << (32 - n));

/* The SHA-256 of bytes, as 64 hex digits. */
function gpSha256(bytes) {
    const length = bytes.length, padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64);
    padded.set(bytes);
    padded[length] = 0x80;
    const view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, Math.floor(length / 2 ** 29));
    view.setUint32(padded.length - 4, (length * 8) >>> 0);
    const h = Uint32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]), w = new Uint32Array(64);
    for (let block = 0; block < padded.length; block += 64) {
        for (let i = 0; i < 64; i++) {
            if (i < 16) {
                w[i] = view.getUint32(block + 4 * i);
                continue;
            }
            const s0 = gpRotr(w[i - 15], 7) ^ gpRotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
            const s1 = gpRotr(w[i - 2], 17) ^ gpRotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        let [a, b, c, d, e, f, g, k] = h;
        for (let i = 0; i < 64; i++) {
            const t1 = k + (gpRotr(e, 6) ^ gpRotr(e, 11) ^ gpRotr(e, 25)) + ((e & f) ^ (~e & g))
                + GP_SHA256_K[i] + w[i];
            const t2 = (gpRotr(a, 2) ^ gpRotr(a, 13) ^ gpRotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            [k, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
        }
        [a, b, c, d, e, f, g, k].forEach((v, i) => { h[i] += v; });
    }
    return Array.from(h, (v) => v.toString(16).padStart(8, "0")).join("");
}

/* -- JSON as Python's json.dumps (ensure_ascii; floats as repr, BigInts as ints) --------- */

function gpJson(value, sortKeys = false) {
    if (value === null || value === undefined)
        return "null";
    if (typeof value === "string")
        return JSON.stringify(value).replace(/[\u007f-\uffff]/g,
            (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    if (typeof value === "number")
        return gpRepr(value);
    if (typeof value === "bigint")
        return String(value);
    if (typeof value === "boolean")
        return String(value);
    if (Array.isArray(value) || ArrayBuffer.isView(value))
        return `[${Array.from(value, (v) => gpJson(v, sortKeys)).join(",")}]`;
    const keys = Object.keys(value);
    if (sortKeys)
        keys.sort();
    return `{${keys.map((k) => `${gpJson(k)}:${gpJson(value[k], sortKeys)}`).join(",")}}`;
}

/* sha256 of the canonical JSON of value (records.sha256_json: sorted keys, no spaces). */
const gpSha256Json = (value) => gpSha256(new TextEncoder().encode(gpJson(value, true)));

/* The data's identity on the device (device.digest): sha256 over each float64 array of its
 * shape's repr ("(n,)", "(n, k)") and its little-endian bytes. */
function gpDigest(...arrays) {
    const parts = arrays.map(([values, shape]) => {
        const head = new TextEncoder().encode(
            shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`);
        const bytes = new Uint8Array(head.length + 8 * values.length);
        const view = new DataView(bytes.buffer);
        bytes.set(head);
        values.forEach((v, i) => view.setFloat64(head.length + 8 * i, v, true));
        return bytes;
    });
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (all.set(p, at), at + p.length), 0);
    return gpSha256(all);
}

/* -- Records ------------------------------------------------------------------------------ */

/* A UTC time as records.py writes it: "YYYY-MM-DDTHH:MM:SS.ffffffZ". */
const gpUtcTime = (date) => date.toISOString().replace(/Z$/, "000Z");

/* A fresh release id: 32 lowercase hex digits (16 random bytes). */
function gpReleaseId() {
    const bytes = new Uint8Array(16);
    gpFillOS(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/* The record's time (UTC); one with no time zone is refused, as records.when refuses it. */
function gpWhen(item) {
    const moment = typeof item.time === "string" && /(Z|[+-]\d\d:\d\d)$/.test(item.time)
        ? Date.parse(item.time) : NaN;
    return Number.isNaN(moment) ? gpLedgerFail("time has no time zone or is not a time")
        : new Date(moment);
}

/* The UTC epoch of a time (records.epoch): "YYYY-MM-DD" (day) or "YYYY-Www" (ISO week). */
function gpEpoch(date, length) {
    if (length === "day")
        return date.toISOString().slice(0, 10);
    const thursday = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(),
        date.getUTCDate() - (date.getUTCDay() + 6) % 7 + 3));
    const year = thursday.getUTCFullYear();
    const week = 1 + Math.floor((thursday - Date.UTC(year, 0, 1)) / (7 * 86400000));
    return `${year}-W${String(week).padStart(2, "0")}`;
}

/* item if it is a record of this format (records.check): its keys, model and exact costs. */
function gpLedgerCheck(item) {
    if (!item || typeof item !== "object" || item.format !== GP_LEDGER_FORMAT)
        gpLedgerFail(`format is not '${GP_LEDGER_FORMAT}'`);
    const missing = GP_LEDGER_REQUIRED.filter((key) => !(key in item));
    if (missing.length)
        gpLedgerFail(`missing ${missing.join(", ")}`);
    if (!GP_LEDGER_MODELS.includes(item.model))
        gpLedgerFail(`model ${JSON.stringify(item.model)}`);
    const delta = item.delta === null ? null : gpRationalParse(item.delta);
    if (gpRationalParse(item.cost)[0] < 0n
        || (delta && !(delta[0] >= 0n && delta[0] < delta[1])))
        gpLedgerFail("a cost is negative or delta is not in [0, 1)");
    gpWhen(item);
    return item;
}

/* The records of a ledger's text; a torn last line or a line that is not a record is one
 * error (records.read). */
function gpLedgerRead(text, name) {
    if (text && !text.endsWith("\n"))
        gpLedgerFail(`${name}: the last line is torn (no line end: an append was interrupted); `
            + "the records before it are intact: remove the last line to read them");
    return text.split("\n").slice(0, -1).map((line, i) => {
        try {
            return gpLedgerCheck(JSON.parse(line));
        } catch (error) {
            return gpLedgerFail(
                `${name}, line ${i + 1}: not a ${GP_LEDGER_FORMAT} record (${error.message})`);
        }
    });
}

/* The exact total of records in a ledger of model GP or CGP (records.in_model): a GP step of
 * epsilon costs epsilon^2/2 in CGP; a CGP step has no GP cost. */
function gpInModel(items, model) {
    return items.reduce((total, item) => {
        const cost = gpRationalParse(item.cost);
        if (item.model === model)
            return gpRatioAdd(total, cost);
        if (item.model === "GP" && model === "CGP")
            return gpRatioAdd(total, gpRatio(cost[0] * cost[0], 2n * cost[1] * cost[1]));
        return gpLedgerFail(`a ${item.model} step has no cost in a ${model} ledger`);
    }, [0n, 1n]);
}

/* -- A budget across days on the device (device.py) ------------------------------------- */

class GpDeviceLedger {
    /* storage (above), cap (null: none; else a positive finite number) per epoch ("day" or
     * "week", UTC) in the model of each release; clock() the current time (a Date). */
    constructor(storage, { cap = null, epoch = "day", clock = () => new Date() } = {}) {
        if (!GP_EPOCHS.includes(epoch))
            throw new GpError("GP_EINVAL",
                              `the epoch must be day or week, got ${JSON.stringify(epoch)}`);
        if (cap !== null && !(typeof cap === "number" && cap > 0 && Number.isFinite(cap)))
            throw new GpError("GP_EINVAL", `the cap must be a positive finite number, got ${cap}`);
        Object.assign(this, { storage, cap, epoch, clock });
    }

    /* The ledger's records, each checked. */
    records() {
        return gpLedgerRead(this.storage.read(), this.storage.name);
    }

    /* The exact spend of this epoch in model, whatever the metric (a device's budget is one
     * budget), as [p, q]: each record's cost times its count (every curve of a batch is
     * the wearer's). */
    spent(model) {
        const now = gpEpoch(this.clock(), this.epoch);
        const counted = model === "GP" || model === "CGP" ? ["GP", "CGP"] : [model];
        return this.records().filter((item) => counted.includes(item.model)
            && gpEpoch(gpWhen(item), this.epoch) === now).reduce((total, item) => {
            const [p, q] = counted.length === 2 ? gpInModel([item], model)
                : gpRationalParse(item.cost);
            return gpRatioAdd(total, gpRatio(p * BigInt(item.count), q));
        }, [0n, 1n]);
    }

    /* Refuse (GP_ECAP, the message naming the cap and the spend) a release of count curves
     * of cost each (a float, or an exact [p, q]) that would take this epoch's spend above
     * the cap; a function of public values only (docs/threat-model.md, "Releases over
     * days"). */
    check(model, cost, count = 1) {
        if (this.cap === null)
            return;
        const [p, q] = typeof cost === "number" ? gpRationalOf(cost) : cost;
        const total = gpRatio(p * BigInt(count), q), spent = this.spent(model);
        if (gpRatioCompare(gpRatioAdd(spent, total), gpRationalOf(this.cap)) > 0)
            throw new GpError("GP_ECAP", `${this.storage.name}: refused before any noise: the `
                + `${model} cap ${gpFormatG(this.cap)} per UTC ${this.epoch} `
                + `(${gpEpoch(this.clock(), this.epoch)}) is spent to `
                + `${gpFormatG(gpRatioNumber(spent))} (exactly ${gpRatioText(spent)}); `
                + `this release costs ${gpFormatG(gpRatioNumber(total))}`);
    }

    /* {release, charged}: after the cap check on count curves of cost each (whether or not
     * key is stored: a refusal depends on the public spend only), the stored release of key
     * charging nothing (with a cap), else draw() -> {release, lines}; the lines are charged
     * (one append), then the release is stored: a failure between them over-charges, never
     * under-charges. */
    release(key, model, cost, draw, count = 1) {
        this.check(model, cost, count);
        if (this.cap !== null) {
            const stored = this.storage.get(key);
            if (stored !== null)
                return { release: stored.release, charged: false };
        }
        const { release, lines } = draw();
        this.storage.append(lines.join(""));
        if (this.cap !== null) {
            const first = JSON.parse(lines[0]);
            this.storage.put(key, { key, release_id: first.release_id, time: first.time, release });
        }
        return { release, charged: true };
    }

    /* The exact totals per model, metric and UTC epoch (records.compose with an epoch):
     * [{epoch, model, metric: {name, sha256}, cost: "p/q", records}], oldest first. */
    totals(length = this.epoch) {
        const groups = new Map();
        for (const item of this.records()) {
            const epoch = gpEpoch(gpWhen(item), length);
            const id = `${epoch} ${item.model} ${item.metric.sha256}`;
            const group = groups.get(id) || { epoch, model: item.model, metric: item.metric,
                cost: [0n, 1n], records: 0 };
            group.cost = gpRatioAdd(group.cost, gpRationalParse(item.cost));
            group.records += 1;
            groups.set(id, group);
        }
        return [...groups.values()].map((g) => ({ ...g, cost: gpRatioText(g.cost) }))
            .sort((a, b) => (a.epoch < b.epoch ? -1 : a.epoch > b.epoch ? 1 : 0));
    }
}

/* Node: the ledger file path (JSON Lines, each append one write on an O_APPEND descriptor,
 * then fsync) and its store path.releases/KEY.json (a temporary file renamed), as the
 * Python target's DeviceLedger keeps them. Node has no flock: one process at a time. */
async function gpFileStorage(path) {
    const fs = await import("node:fs"), { dirname, join } = await import("node:path");
    const store = `${path}.releases`, missing = (error) => error && error.code === "ENOENT";
    return {
        name: path,
        read() {
            try {
                return fs.readFileSync(path, "utf8");
            } catch (error) {
                return missing(error) ? "" : gpLedgerFail(`${path}: ${error.message}`);
            }
        },
        append(text) {
            const bytes = new TextEncoder().encode(text);
            fs.mkdirSync(dirname(path), { recursive: true });
            const descriptor = fs.openSync(path, "a", 0o600);
            let written;
            try {
                written = fs.writeSync(descriptor, bytes);
                fs.fsyncSync(descriptor);
            } finally {
                fs.closeSync(descriptor);
            }
            if (written !== bytes.length)
                gpLedgerFail(`${path}: only ${written} of ${bytes.length} bytes appended (disk `
                    + "full?): its last line is torn");
        },
        get(key) {
            try {
                return JSON.parse(fs.readFileSync(join(store, `${key}.json`), "utf8"));
            } catch (error) {
                return missing(error) ? null : gpLedgerFail(`${store}: ${error.message}`);
            }
        },
        put(key, value) {
            fs.mkdirSync(store, { recursive: true, mode: 0o700 });
            const file = join(store, `${key}.json`), temporary = `${file}.${gpReleaseId()}.tmp`;
            fs.writeFileSync(temporary, `${gpJson(value)}\n`, { mode: 0o600 });
            fs.renameSync(temporary, file);
        },
    };
}

/* A browser's localStorage (or another object with getItem/setItem): the records under
 * "PREFIX:records", each stored release under "PREFIX:release:KEY". setItem writes all or
 * throws (the quota), so an append is whole or nothing. */
function gpBrowserStorage(prefix = GP_LEDGER_FORMAT, storage = globalThis.localStorage) {
    const records = `${prefix}:records`;
    return {
        name: `localStorage ${prefix}`,
        read: () => storage.getItem(records) ?? "",
        append: (text) => storage.setItem(records, (storage.getItem(records) ?? "") + text),
        get(key) {
            const value = storage.getItem(`${prefix}:release:${key}`);
            return value === null ? null : JSON.parse(value);
        },
        put: (key, value) => storage.setItem(`${prefix}:release:${key}`, gpJson(value)),
    };
}
