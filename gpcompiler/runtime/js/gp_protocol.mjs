/* The protocol program of a generated JS module (docs/reference/js.md, "The protocol
 * program"): the C target's NAME_main.c in JavaScript, written against the module's API only
 * (NAME, COEF_DIM, VALUE_DIM, CURVE_INTERVAL, HELP_TEXT, releaseFacts, project, privatize,
 * projectAndPrivatize, sourceOS, sourceKey). Inlined verbatim into every NAME.mjs; it runs
 * only as Node's main script, and imports Node's modules then.
 *
 * The input is read whole, checked to be UTF-8, then parsed as Python's csv module reads
 * sys.stdin (the excel dialect; CPython's _csv.c state machine), then released; the output
 * is written only when every row is released. Numbers are Python's float() syntax, printed
 * as Python's repr. Bad input: one line on stderr, exit 2, nothing on stdout, the Python
 * target's line but for the program's name. */

const GP_FIELD_LIMIT = 131072; /* Python's csv.field_size_limit() */

class GpProtocolError extends Error {}

const gpProtocolFail = (message) => { throw new GpProtocolError(message); };

/* -- Python's repr of a float and of a str ----------------------------------------------- */

/* Python's repr(float(x)): the shortest digits that parse back (toExponential's), in fixed
 * notation for 1e-4 <= |x| < 1e16, else d.ddde+XX. */
function gpRepr(x) {
    if (Number.isNaN(x)) return "nan";
    const sign = x < 0 || Object.is(x, -0) ? "-" : "";
    x = Math.abs(x);
    if (x === Infinity) return `${sign}inf`;
    if (x === 0) return `${sign}0.0`;
    if (x >= 1e-4 && x < 1e16) {  /* fixed notation in both: the same shortest digits */
        const fixed = String(x);
        return sign + (fixed.includes(".") ? fixed : `${fixed}.0`);
    }
    const [mantissa, exponent] = x.toExponential().split("e");
    const digits = mantissa.replace(".", ""), point = Number(exponent) + 1, n = digits.length;
    if (point <= -4 || point > 16) {
        const e = point - 1, tail = n > 1 ? `.${digits.slice(1)}` : "";
        return `${sign}${digits[0]}${tail}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
    if (point >= n) return `${sign}${digits}${"0".repeat(point - n)}.0`;
    return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/* Python's repr of a str: quotes and escapes as Python's; U+0080..U+00A0 and U+00AD as \xNN,
 * other code points beyond ASCII as they are (as the C program). */
function gpReprText(s) {
    const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
    let out = quote;
    for (const char of s) {
        const code = char.codePointAt(0);
        if (char === "\\" || char === quote) out += `\\${char}`;
        else if (char === "\t") out += "\\t";
        else if (char === "\n") out += "\\n";
        else if (char === "\r") out += "\\r";
        else if (code < 0x20 || code === 0x7F || (code >= 0x80 && code <= 0xA0) || code === 0xAD)
            out += `\\x${code.toString(16).padStart(2, "0")}`;
        else out += char;
    }
    return out + quote;
}

/* -- Numbers as Python's float(): ASCII whitespace around, '_' between digits ------------ */

const gpSpace = (c) => c === " " || (c >= "\t" && c <= "\r");

/* float(s), or null where Python's float() rejects s. */
function gpParseFloat(s) {
    let i = 0, n = s.length;
    while (n > 0 && gpSpace(s[n - 1])) n--;
    while (i < n && gpSpace(s[i])) i++;
    s = s.slice(i, n);
    const signed = s[0] === "+" || s[0] === "-", word = s.slice(signed ? 1 : 0).toLowerCase();
    if (word === "inf" || word === "infinity" || word === "nan") {
        const v = word === "nan" ? NaN : Infinity;
        return s[0] === "-" ? -v : v;
    }
    if (/(^|[^0-9])_|_($|[^0-9])/.test(s)) return null; /* '_' only between two digits */
    const clean = s.replace(/_/g, "");
    if (!/^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(clean)) return null;
    return Number(clean); /* correctly rounded, as Python's */
}

/* -- CSV as Python's csv.reader reads it (the excel dialect, not strict) ------------------ */

const GP_EOL = null; /* the end of a line: after its "\n", or the end of the input */

/* The records of the input (arrays of fields); a blank line is dropped, as the protocol
 * drops []. CPython's _csv.c, parse_process_char: "\r" and "\n" end a record outside
 * quotes; at the end, an open quoted field ends its record. */
function gpReadCsv(text) {
    const records = [];
    let state = "START_RECORD", fields = [], field = "", length = 0;
    const saveField = () => {
        fields.push(field);
        field = "";
        length = 0;
    };
    const endRecord = () => {
        if (fields.length) records.push(fields);
        fields = [];
    };
    const addChar = (c) => {
        if (length >= GP_FIELD_LIMIT)
            gpProtocolFail(`field larger than field limit (${GP_FIELD_LIMIT})`);
        field += c;
        length++;
    };
    const step = (c) => {
        const newline = c === "\n" || c === "\r", end = newline || c === GP_EOL;
        switch (state) {
        case "START_RECORD":
            if (end) {
                state = c === GP_EOL ? "START_RECORD" : "EAT_CRNL";
                return;
            }
            state = "START_FIELD"; /* fall through */
        case "START_FIELD":
        case "IN_FIELD":
            if (end) {
                state = c === GP_EOL ? "START_RECORD" : "EAT_CRNL";
                saveField();
                endRecord();
            } else if (c === ",") {
                state = "START_FIELD";
                saveField();
            } else if (c === '"' && state === "START_FIELD") {
                state = "IN_QUOTED";
            } else {
                state = "IN_FIELD";
                addChar(c);
            }
            return;
        case "IN_QUOTED":
            if (c === '"') state = "QUOTE_IN_QUOTED";
            else if (c !== GP_EOL) addChar(c);
            return;
        case "QUOTE_IN_QUOTED":
            if (c === '"') {
                state = "IN_QUOTED";
                addChar(c);
                return;
            }
            state = "START_FIELD";
            step(c); /* ',' or a line's end as after a field; else IN_FIELD */
            return;
        default: /* EAT_CRNL */
            if (c === GP_EOL) state = "START_RECORD";
            else if (!newline)
                gpProtocolFail("new-line character seen in unquoted field - do you need to open "
                               + "the file in universal-newline mode?");
        }
    };
    for (const c of text) {
        step(c);
        if (c === "\n") step(GP_EOL);
    }
    if (text.length && !text.endsWith("\n")) step(GP_EOL);
    if (state === "IN_QUOTED") {
        saveField();
        endRecord();
    }
    return records;
}

/* The length of the UTF-8 sequence at bytes[i], or 0 if it is not one. */
function gpUtf8Length(bytes, i) {
    const s0 = bytes[i], n = bytes.length - i;
    const length = s0 < 0x80 ? 1 : s0 < 0xC2 ? 0 : s0 < 0xE0 ? 2 : s0 < 0xF0 ? 3 : s0 < 0xF5 ? 4 : 0;
    if (length === 0 || length > n) return 0;
    for (let k = 1; k < length; k++)
        if ((bytes[i + k] & 0xC0) !== 0x80) return 0;
    const s1 = bytes[i + 1];
    if ((s0 === 0xE0 && s1 < 0xA0) || (s0 === 0xED && s1 >= 0xA0)
        || (s0 === 0xF0 && s1 < 0x90) || (s0 === 0xF4 && s1 >= 0x90))
        return 0; /* overlong, a surrogate, or beyond U+10FFFF */
    return length;
}

/* The input as text, checked to be UTF-8 (the Python target decodes it so). */
function gpUtf8(bytes) {
    for (let i = 0; i < bytes.length;) {
        const length = gpUtf8Length(bytes, i);
        if (!length)
            gpProtocolFail(`the input is not UTF-8 text (byte 0x${bytes[i].toString(16)
                .padStart(2, "0")} at offset ${i})`);
        i += length;
    }
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
}

/* -- The command line, as argparse parses the Python target's (runtime/protocol.py) ------- */

const GP_COMMANDS = ["privatize", "release", "project"];
const GP_FLAGS = ["--help", "--epsilon", "--rho", "--bound", "--key"];

/* argparse's negative number: -DIGITS or -[DIGITS].DIGITS (a value, not an option). */
const gpNegativeNumber = (s) => /^-([0-9]+|[0-9]*\.[0-9]+)$/.test(s);

/* The flag s names (its unique prefix up to any '='; -h), of the first `flags`, or -1. */
function gpFlag(s, flags) {
    const length = s.includes("=") ? s.indexOf("=") : s.length;
    if (s === "-h") return 0;
    if (!s.startsWith("--") || length <= 2) return -1;
    for (let f = 0; f < flags; f++)
        if (GP_FLAGS[f].startsWith(s.slice(0, length))) return f;
    return -1;
}

/* Whether argparse reads s as an option string (else it is a value or a positional). */
function gpOptionLike(s, flags) {
    if (s[0] !== "-" || s.length === 1) return false;
    return gpFlag(s, flags) >= 0 || (!gpNegativeNumber(s) && !s.includes(" "));
}

/* The subcommand's options: "help", or the options. After "--" every argument is a
 * positional, and the commands take none. */
function gpParseCommand(argv, o, extras) {
    const flags = o.command === "project" ? 1 : 5, seen = [];
    let dash = false;
    for (let i = 0; i < argv.length; i++) {
        const f = dash ? -1 : gpFlag(argv[i], flags);
        dash = dash || argv[i] === "--";
        if (f === 0 && argv[i].includes("="))
            gpProtocolFail(`argument -h/--help: ignored explicit argument ${gpReprText(
                argv[i].slice(argv[i].indexOf("=") + 1))}`);
        if (f < 0 && !dash && argv[i].startsWith("-h"))
            gpProtocolFail(`argument -h/--help: ignored explicit argument ${gpReprText(argv[i].slice(2))}`);
        if (f === 0) return "help";
        if (f < 0) {
            extras.push(argv[i]);
            continue;
        }
        let value = argv[i].includes("=") ? argv[i].slice(argv[i].indexOf("=") + 1) : null;
        if (value === null && (i + 1 === argv.length || argv[i + 1] === "--"
                               || gpOptionLike(argv[i + 1], flags)))
            gpProtocolFail(`argument ${GP_FLAGS[f]}: expected one argument`);
        value = value === null ? argv[++i] : value;
        const number = f < 4 ? gpParseFloat(value) : 0;
        if (number === null)
            gpProtocolFail(`argument ${GP_FLAGS[f]}: invalid float value: ${gpReprText(value)}`);
        if ((f === 1 && seen[2]) || (f === 2 && seen[1]))
            gpProtocolFail(`argument ${GP_FLAGS[f]}: not allowed with argument ${GP_FLAGS[3 - f]}`);
        seen[f] = true;
        if (f <= 2) [o.budget, o.value] = [f === 1 ? "epsilon" : "rho", number];
        else if (f === 3) [o.bounded, o.bound] = [true, number];
        else o.key = value;
    }
    if (o.command !== "project" && !seen[1] && !seen[2])
        gpProtocolFail("one of the arguments --epsilon --rho is required");
    return o;
}

/* argv as argparse parses it: the options, or "help" with o.command the text to print. */
function gpParseArguments(argv, o) {
    const extras = [];
    let i = 0;
    for (; i < argv.length && gpOptionLike(argv[i], 1) && argv[i] !== "--"; i++) {
        if (gpFlag(argv[i], 1) === 0) {
            o.command = "top";
            return "help";
        }
        extras.push(argv[i]);
    }
    if (i === argv.length)
        gpProtocolFail("the following arguments are required: command");
    if (!GP_COMMANDS.includes(argv[i]))
        gpProtocolFail(`argument command: invalid choice: ${gpReprText(argv[i])} (choose from `
                       + "'privatize', 'release', 'project')");
    o.command = argv[i];
    if (gpParseCommand(argv.slice(i + 1), o, extras) === "help")
        return "help";
    if (extras.length)
        gpProtocolFail(`unrecognized arguments: ${extras.join(" ")}`);
    return o;
}

/* -- The data: the header, then numbers ------------------------------------------------- */

function gpHeader(records, names) {
    const got = records.length ? records[0] : null;
    if (got && got.length === names.length && got.every((f, i) => f === names[i]))
        return;
    gpProtocolFail(`the header must be ${names.join(",")}, got ${gpReprText(got ? got.join(",") : "no input")}`);
}

/* The numbers of data record r (line number r + 1: blank lines are not counted). */
function gpNumbers(record, r, names) {
    if (record.length !== names.length + 1)
        gpProtocolFail(`line ${r + 1} has ${record.length} fields, expected ${names.length + 1}`);
    return names.map((name, j) => {
        const v = gpParseFloat(record[j + 1]);
        if (v === null || !Number.isFinite(v))
            gpProtocolFail(`line ${r + 1}: ${name}=${gpReprText(record[j + 1])} is not a finite number`);
        return v;
    });
}

/* -- Releases, with the Python target's checks and messages ---------------------------- */

/* The key of --key as bytes.fromhex reads it (ASCII whitespace before a pair of digits). */
function gpProtocolKey(hex) {
    const bytes = [];
    for (let i = 0; i < hex.length;) {
        if (gpSpace(hex[i])) {
            i++;
            continue;
        }
        if (!/^[0-9a-fA-F]{2}$/.test(hex.slice(i, i + 2)))
            gpProtocolFail("a key must be 64 hexadecimal digits (256 bits)");
        bytes.push(parseInt(hex.slice(i, i + 2), 16));
        i += 2;
    }
    if (bytes.length !== 32)
        gpProtocolFail("a key must be 32 bytes or 64 hexadecimal digits (256 bits)");
    return Uint8Array.from(bytes);
}

/* The budget, its noise scale and the bound: the Python module's _budget, _noise_scale and
 * _bound, in that order. */
function gpCheckRelease(o) {
    let value = gpRepr(o.value), facts;
    if (!(Number.isFinite(o.value) && o.value > 0))
        gpProtocolFail(`the privacy budget must be a positive finite number, got ${value}`);
    try {
        facts = releaseFacts(o.budget, o.value, 0);
    } catch (error) {
        gpProtocolFail(`the noise scale for budget ${value} overflows float64`);
    }
    if (!o.bounded)
        return;
    value = gpRepr(o.bound);
    const limit = gpLdexp(facts.gamma, 50);
    if (!(Number.isFinite(o.bound) && o.bound > 0))
        gpProtocolFail(`the bound must be a positive finite number, got ${value}`);
    if (o.bound < GP_BOUND_FLOOR)
        gpProtocolFail("the bound must be at least 2^-960 (below it the projection's float "
                       + `error underflows past ETA B), got ${value}`);
    if (o.bound > limit)
        gpProtocolFail(`the bound ${value} exceeds 2^50 lattice steps (${gpRepr(limit)}) at this `
                       + "budget: use a smaller bound or a smaller budget");
}

/* The sample times of one curve, checked as the Python module's _check_times. */
function gpCheckTimes(t) {
    for (let i = 1; i < t.length; i++)
        if (t[i] < t[i - 1])
            gpProtocolFail("sample times must be in increasing order (a repeated time is a jump)");
    const [lo, hi] = CURVE_INTERVAL;
    if (t.length && (t[0] < lo || t[t.length - 1] > hi))
        gpProtocolFail(`sample times must lie in [${gpRepr(lo)}, ${gpRepr(hi)}]`);
}

/* A call of the API, its GpError as the status message. */
function gpCall(f) {
    try {
        return f();
    } catch (error) {
        if (error instanceof GpError) gpProtocolFail(error.message);
        throw error;
    }
}

/* The random words: the key's, from row address 0, or the OS's. */
const gpSourceOf = (o) => (o.key === undefined ? sourceOS() : sourceKey(gpProtocolKey(o.key), 0n));

/* The id of a row as csv.writer writes it (quoted if it holds a comma, a quote or "\n"). */
const gpWriteId = (s) => (/[,"\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/* coefficients.csv of ids and c (rows x COEF_DIM). */
function gpWriteRows(ids, c) {
    const lines = [["curve", ...Array.from({ length: COEF_DIM }, (_, j) => `c${j}`)].join(",")];
    ids.forEach((id, r) => {
        const row = Array.from(c.subarray(r * COEF_DIM, (r + 1) * COEF_DIM), gpRepr);
        lines.push([gpWriteId(id), ...row].join(","));
    });
    return lines.join("\n") + "\n";
}

/* privatize: the rows of coefficients.csv, clipped and released in one call. */
function gpPrivatizeCommand(o, records, names) {
    const data = records.slice(1), c = new Float64Array(data.length * COEF_DIM);
    data.forEach((record, r) => c.set(gpNumbers(record, r + 1, names.slice(1)), r * COEF_DIM));
    const source = gpSourceOf(o);
    gpCheckRelease(o);
    const released = gpCall(() => privatize(c, data.length, o.budget, o.value,
                                            o.bounded ? o.bound : 0, source));
    return gpWriteRows(data.map((record) => record[0]), released);
}

/* release and project: the curves of curves.csv (in order of first appearance of their
 * ids), one call per curve. */
function gpCurvesCommand(o, records, names) {
    const curves = new Map();
    records.slice(1).forEach((record, r) => {
        const values = gpNumbers(record, r + 1, names.slice(1));
        if (!curves.has(record[0])) curves.set(record[0], []);
        curves.get(record[0]).push(values);
    });
    const source = o.command === "release" ? gpSourceOf(o) : null;
    const c = new Float64Array(curves.size * COEF_DIM);
    let k = 0;
    for (const samples of curves.values()) {
        const t = samples.map((v) => v[0]), y = samples.flatMap((v) => v.slice(1));
        if (o.command === "release" && k === 0)
            gpCheckRelease(o);
        gpCheckTimes(t);
        c.set(gpCall(() => (o.command === "release"
            ? projectAndPrivatize(t, y, o.budget, o.value, o.bounded ? o.bound : 0, source)
            : project(t, y, 0))), k * COEF_DIM);
        k++;
    }
    return gpWriteRows([...curves.keys()], c);
}

/* The header of a command: curve,c0,...,c{D-1} or curve,t,y,y2,...,yn. */
function gpHeaderNames(command) {
    if (command === "privatize")
        return ["curve", ...Array.from({ length: COEF_DIM }, (_, j) => `c${j}`)];
    return ["curve", "t", "y", ...Array.from({ length: VALUE_DIM - 1 }, (_, j) => `y${j + 2}`)];
}

/* -- The program ------------------------------------------------------------------------ */

/* Whether the module at url is Node's main script (argv[1], its real path). */
async function gpIsMain(url) {
    const { pathToFileURL } = await import("node:url");
    const { realpathSync } = await import("node:fs");
    try {
        return pathToFileURL(realpathSync(globalThis.process.argv[1])).href === url;
    } catch (error) {
        return false;
    }
}

/* Run the protocol program on argv: its output on stdout and exit 0, or one line on stderr
 * (Python's ' '.join(str(error).split())) and exit 2. */
async function gpProtocolMain(argv) {
    const process = globalThis.process, o = {};
    let out;
    try {
        if (gpParseArguments(argv, o) === "help") {
            process.stdout.write(HELP_TEXT[o.command]);
            return;
        }
        const chunks = [];
        for await (const chunk of process.stdin)
            chunks.push(chunk);
        const records = gpReadCsv(gpUtf8(new Uint8Array(Buffer.concat(chunks))));
        const names = gpHeaderNames(o.command);
        gpHeader(records, names);
        out = o.command === "privatize" ? gpPrivatizeCommand(o, records, names)
            : gpCurvesCommand(o, records, names);
    } catch (error) {
        if (!(error instanceof GpProtocolError)) throw error;
        const line = error.message.split(/[ \t\n\v\f\r]+/).filter(Boolean).join(" ");
        process.stderr.write(`${NAME}: error: ${line}\n`);
        process.exitCode = 2;
        return;
    }
    process.stdout.write(out);
}
