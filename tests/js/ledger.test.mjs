// The JS target's ledger (docs/reference/ledger.md): SHA-256 against node:crypto, and a
// budget across days on the device: 30 simulated days under a cap (the Python target's
// tests/test_ledger.py test_thirty_days_on_the_device), in a file and in a localStorage.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import * as linear from "../../generated/js/linear.mjs";

const DAY = 86400000, START = Date.UTC(2026, 2, 1, 9);
const POINT_THREE = [5404319552844595n, 1n << 54n];   // 0.3 exactly: 5404319552844595/2^54

test("ledgerKey is the SHA-256 of Python's canonical JSON, at every padding length", () => {
    for (let n = 0; n < 300; n++) {
        const text = "é\u2028\"\x7f".repeat(n % 4) + "x".repeat(n);
        const python = JSON.stringify(text).replace(/[\u007f-\uffff]/g,
            (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
        assert.equal(linear.ledgerKey(text), createHash("sha256").update(python).digest("hex"), n);
    }
    assert.equal(linear.ledgerKey({ b: "1", a: { d: "2", c: "3" } }),
                 createHash("sha256").update('{"a":{"c":"3","d":"2"},"b":"1"}').digest("hex"));
});

/** A watch's 30 days (the Python test's): four curves a day, the first twice (memoized), then
 * two new ones, then a fourth that the cap 1 per day refuses before any noise. */
function thirtyDays(storage) {
    const now = [new Date(START)];
    const device = new linear.DeviceLedger(storage, { cap: 1.0, clock: () => now[0] });
    const t = Array.from({ length: 60 }, (_, i) => i / 59);
    let draws = 0, refused = 0;
    const source = () => linear.sourceCallback((bytes) => {
        draws++;
        globalThis.crypto.getRandomValues(bytes);
    });
    for (let day = 0; day < 30; day++) {
        now[0] = new Date(START + day * DAY);
        const curves = [t.map((x) => Math.sin(3 * x) + day), t.map((x) => Math.cos(x) + day),
                        t.map((x) => x + day), t.map((x) => x * x + day)];
        const first = linear.privatizeOnDevice(device, t, curves[0], "epsilon", 0.3, 0, source());
        now[0] = new Date(now[0].getTime() + 5 * 3600000);
        const again = linear.privatizeOnDevice(device, t, curves[0], "epsilon", 0.3, 0, source());
        assert.ok(first.charged && !again.charged);
        assert.deepEqual(again.coefficients, first.coefficients);
        for (const y of curves.slice(1, 3))
            assert.ok(linear.privatizeOnDevice(device, t, y, "epsilon", 0.3, 0, source()).charged);
        const before = draws;
        const refusal = new RegExp("the GP cap 1 per UTC day \\(2026-\\d\\d-\\d\\d\\) is spent "
            + "to 0\\.9 \\(exactly 16212958658533785/18014398509481984\\); "
            + "this release costs 0\\.3$");
        let message;
        assert.throws(() => linear.privatizeOnDevice(device, t, curves[3], "epsilon", 0.3, 0, source()),
            (error) => error.status === "GP_ECAP" && refusal.test(message = error.message));
        // the cap before the memo: the stored curve is refused too, in the same words
        assert.throws(() => linear.privatizeOnDevice(device, t, curves[0], "epsilon", 0.3, 0, source()),
            (error) => error.status === "GP_ECAP" && error.message === message);
        assert.equal(draws, before, "no noise drawn for a refused release");
        refused++;
    }
    const days = device.totals("day");
    const expected = `${3n * POINT_THREE[0]}/${POINT_THREE[1]}`;
    assert.equal(refused, 30);
    assert.equal(device.records().length, 90);
    assert.deepEqual(days.map((d) => [d.cost, d.records]), Array(30).fill([expected, 3]));
    assert.deepEqual(days.map((d) => d.epoch).slice(0, 2), ["2026-03-01", "2026-03-02"]);
    assert.equal(days.at(-1).epoch, "2026-03-30");
    assert.deepEqual(device.totals("week").map((w) => [w.epoch, w.records]),
                     [["2026-W09", 3], ["2026-W10", 21], ["2026-W11", 21], ["2026-W12", 21],
                      ["2026-W13", 21], ["2026-W14", 3]]);
    const weekly = new linear.DeviceLedger(storage, { cap: 6.3, epoch: "week", clock: () => now[0] });
    assert.deepEqual(weekly.spent("GP"), [3n * POINT_THREE[0], POINT_THREE[1]]);
    const cgp = new linear.DeviceLedger(storage, { cap: 2.7, clock: () => now[0] });
    const [p, q] = POINT_THREE;  // each GP release of epsilon costs epsilon^2/2 in a CGP cap
    assert.deepEqual(cgp.spent("CGP"), [3n * p * p, 2n * q * q]);
    return device;
}

test("30 days in a file: every day's exact spend is 3 x 0.3, one stored release per charge", async () => {
    const directory = mkdtempSync(join(tmpdir(), "gp-ledger-"));
    const path = join(directory, "watch.jsonl");
    thirtyDays(await linear.fileStorage(path));
    assert.deepEqual(readdirSync(directory).sort(), ["watch.jsonl", "watch.jsonl.releases"]);
    assert.equal(readdirSync(`${path}.releases`).length, 90);
    assert.equal(statSync(`${path}.releases`).mode & 0o777, 0o700);
    assert.deepEqual(new Set(readdirSync(`${path}.releases`).map(
        (name) => statSync(join(`${path}.releases`, name)).mode & 0o777)), new Set([0o600]));
    assert.ok(!readFileSync(path, "utf8").includes("release\""));
});

test("30 days in a localStorage; a torn or foreign ledger is refused in one message", () => {
    const items = new Map();
    const localStorage = { getItem: (k) => (items.has(k) ? items.get(k) : null),
                           setItem: (k, v) => items.set(k, String(v)) };
    const storage = linear.browserStorage("watch", localStorage);
    const device = thirtyDays(storage);
    assert.equal([...items.keys()].filter((k) => k.startsWith("watch:release:")).length, 90);
    const text = items.get("watch:records");
    items.set("watch:records", text.slice(0, -5));
    assert.throws(() => device.records(), { status: "GP_ELEDGER", message: /the last line is torn/ });
    items.set("watch:records", `${text}{"format":"gpcompiler-ledger/0"}\n`);
    assert.throws(() => device.records(), { message: /line 91: not a gpcompiler-ledger\/1 record/ });
});

test("one cap: records of every metric, each curve of a batch", () => {
    const items = new Map();
    const storage = linear.browserStorage("batch", {
        getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)) });
    const device = new linear.DeviceLedger(storage, { cap: 1.0, clock: () => new Date(START) });
    const line = linear.ledgerRecord("epsilon", 0.25, 0, 2, "x", "0".repeat(32), new Date(START));
    const reworded = JSON.parse(line);    // another spec's metric text: another sha256
    reworded.metric = { name: "L2", sha256: "f".repeat(64) };
    storage.append(line + `${JSON.stringify(reworded)}\n`);
    assert.deepEqual(device.spent("GP"), [1n, 1n]);            // 2 x 0.25 twice
    const draw = () => assert.fail("noise drawn");
    assert.throws(() => device.release("k", "GP", 1.0, draw, 400), (error) => error.status === "GP_ECAP"
        && error.message.endsWith("is spent to 1 (exactly 1); this release costs 400"));
    const fresh = new linear.DeviceLedger(storage, { cap: 400, clock: () => new Date(START + DAY) });
    const batch = linear.ledgerRecord("epsilon", 1.0, 0, 400, "x", "0".repeat(32), new Date(START + DAY));
    assert.ok(fresh.release("k", "GP", 1.0, () => ({ release: [0], lines: [batch] }), 400).charged);
    assert.deepEqual(fresh.spent("GP"), [400n, 1n]);
    assert.throws(() => fresh.release("k2", "GP", 1e-9, draw), { status: "GP_ECAP" });
});

test("ledgerRecord and DeviceLedger refuse what C refuses", () => {
    const id = "0123456789abcdef".repeat(2), time = "2026-03-01T09:00:00.250000Z";
    for (const call of [() => linear.ledgerRecord("epsilon", 0.5, 0, 1, "x", id.toUpperCase(), time),
                        () => linear.ledgerRecord("epsilon", 0.5, 0, 1, "x", id.slice(1), time),
                        () => linear.ledgerRecord("epsilon", 0.5, 0, 1, "x", id, "2026-03-01T09:00:00+01:00"),
                        () => linear.ledgerRecord("epsilon", 0.5, 0, 1, "x", id, '2026-03-01T09:00:00"Z'),
                        () => linear.ledgerRecord("epsilon", 0.5, 0, 0, "x", id, time),
                        () => linear.ledgerRecord("delta", 0.5, 0, 1, "x", id, time),
                        () => linear.ledgerRecord("epsilon", -0.5, 0, 1, "x", id, time),
                        () => new linear.DeviceLedger(null, { cap: -1 }),
                        () => new linear.DeviceLedger(null, { epoch: "month" })])
        assert.throws(call, { status: "GP_EINVAL" }, String(call));
    const line = linear.ledgerRecord("rho", 0.25, 0, 3, "a \"label\" é", id, new Date(START));
    assert.ok(line.endsWith("}\n") && !line.slice(0, -1).includes("\n"));
    assert.match(line, /"time":"2026-03-01T09:00:00\.000000Z","label":"a \\"label\\" \\u00e9"/);
    assert.match(line, /"cost":"1\/4".*"count":3\}/);
    const path = join(mkdtempSync(join(tmpdir(), "gp-ledger-")), "torn.jsonl");
    writeFileSync(path, line.slice(0, -1));
    return linear.fileStorage(path).then((storage) => assert.throws(
        () => new linear.DeviceLedger(storage).spent("GP"), /torn/));
});
