// The PRF of the JS runtime (docs/reference/randomness.md): SHAKE128 against the FIPS 202
// examples and Python's hashlib, and the words of the address scheme.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { loadRuntime } from "./runtime.mjs";

const R = await loadRuntime();
const GOLDEN = JSON.parse(readFileSync(new URL("golden/shake.json", import.meta.url), "utf8"));
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) || [], (b) => parseInt(b, 16));

/** The first `size` output bytes of SHAKE128(message), read word by word as the runtime does. */
function shake(message, size) {
    const stream = R.gpXofAbsorb(message), out = [];
    for (let i = 0; out.length < size; i++) {
        const word = R.gpWordBig(R.gpXofWord(stream, i));
        for (let b = 0n; b < 8n; b++)
            out.push(Number((word >> (8n * b)) & 0xFFn));
    }
    return Buffer.from(out.slice(0, size)).toString("hex");
}

test("SHAKE128 gives the FIPS 202 examples (NIST CSRC SHAKE128_Msg0, SHAKE128_Msg1600)", () => {
    assert.equal(shake(new Uint8Array(0), 64),
        "7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26"
        + "3cb1eea988004b93103cfb0aeefd2a686e01fa4a58e8a3639ca8a1e3f9ae57e2");
    assert.equal(shake(new Uint8Array(200).fill(0xA3), 64),
        "131ab8d2b594946b9c81333f9bb6e0ce75c3b93104fa3469d3917457385da037"
        + "cf232ef7164a6d1eb448c8908186ad852d3f85a5cf28da1ab6fe343817197846");
});

test("SHAKE128 equals Python's hashlib across the rate and over several output blocks", () => {
    for (const [message, output] of GOLDEN.outputs)
        assert.equal(shake(fromHex(message), 400), output, `message of ${message.length / 2} bytes`);
});

test("words by address equal SHAKE128(key || LE64(row) || LE32(level)) at bytes 8 index", () => {
    const key = fromHex(GOLDEN.key);
    for (const [row, index, level, word] of GOLDEN.words)
        assert.equal(R.gpWord(key, BigInt(row), index, level), BigInt(word), `${row} ${index} ${level}`);
});

test("keys are exactly 64 hex digits, rows in [0, 2^64)", () => {
    assert.deepEqual(Array.from(R.gpParseKey("00ff".repeat(16)).slice(0, 2)), [0, 255]);
    for (const bad of ["00".repeat(31), "zz".repeat(32), "00".repeat(33), ` ${"00".repeat(32)}`, 7])
        assert.throws(() => R.gpParseKey(bad), { status: "GP_EINVAL" });
    const key = new Uint8Array(32);
    assert.throws(() => R.gpSourceKey(key, -1n), { status: "GP_EINVAL" });
    assert.throws(() => R.gpSourceKey(key, 1n << 64n), { status: "GP_EINVAL" });
    assert.throws(() => R.gpSourceKey(key, 0), { status: "GP_EINVAL" });
    assert.throws(() => R.gpSourceKey(new Uint8Array(31), 0n), { status: "GP_EINVAL" });
});

test("OS entropy comes from crypto.getRandomValues in chunks of at most 65,536 bytes", () => {
    const original = globalThis.crypto.getRandomValues, sizes = [];
    globalThis.crypto.getRandomValues = (array) => {
        sizes.push(array.length);
        return original.call(globalThis.crypto, array);
    };
    try {
        const bytes = new Uint8Array(200000);
        R.gpSourceOS().fill(bytes);
        assert.deepEqual(sizes, [65536, 65536, 65536, 3392]);
        assert.ok(bytes.slice(-32).some((b) => b !== 0));
    } finally {
        globalThis.crypto.getRandomValues = original;
    }
});
