// components/core/text.ts at its edges: the cap holds at exactly the limit and one byte past it,
// by the size the caller counts in; a cut says truly how much it took; surrogate pairs are never
// split; lists and pieces keep every name and every character accounted for.
import assert from "node:assert/strict";
import {
    capLine,
    capStrings,
    capText,
    LINE_LIMIT,
    LIST_SHOWN,
    nameList,
    PIECE_UNITS,
    pieces,
    utf8Bytes,
} from "../../components/core/text.js";

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const CUT = /^(.*) \[\.\.\. (\d+) characters cut \.\.\.\] (.*)$/s;

/** The start, the count said to be cut, and the end of a cut line. */
function parts(line: string): { start: string; cut: number; end: string } {
    const m = CUT.exec(line);
    assert.ok(m, `not a cut line: ${line}`);
    return { start: m[1], cut: Number(m[2]), end: m[3] };
}

describe("capLine at the limit", () => {
    it("a line of exactly the limit is kept; one byte more is cut to at most the limit", () => {
        const at = "x".repeat(LINE_LIMIT);
        assert.equal(capLine(at), at);
        const over = capLine(`${at}y`);
        assert.ok(utf8Bytes(over) <= LINE_LIMIT, `${utf8Bytes(over)} bytes`);
        assert.notEqual(over, `${at}y`);
        // counted in UTF-8 bytes, not characters: 2048 euro signs are 6144 bytes
        assert.notEqual(capLine("\u20ac".repeat(LINE_LIMIT / 2)), "\u20ac".repeat(LINE_LIMIT / 2));
    });

    it("keeps as much of the start as of the end, and the count it says was cut is what is missing", () => {
        const line = `${"s".repeat(3000)}${"m".repeat(5000)}${"e".repeat(3000)}`;
        const { start, cut, end } = parts(capLine(line));
        assert.match(start, /^s+$/);
        assert.match(end, /^e+$/);
        assert.equal(start.length, end.length);
        assert.ok(start.length > 1000, `only ${start.length} characters kept each side`);
        assert.equal(start.length + cut + end.length, line.length);
    });

    it("a caller's limit and size are the ones held: 100 units of a custom count", () => {
        const line = "ab".repeat(100);
        const capped = capLine(line, 100, (s) => s.length);
        assert.ok(capped.length <= 100);
        const { start, cut, end } = parts(capped);
        assert.ok(start.length > 0 && start === line.slice(0, start.length));
        assert.ok(end.length > 0 && line.endsWith(end));
        assert.equal(start.length + cut + end.length, 200);
        assert.equal(
            capLine(line, 200, (s) => s.length),
            line,
        );
        // by the caller's count (twice the length) a 60-character line is over 100
        assert.notEqual(
            capLine("x".repeat(60), 100, (s) => 2 * s.length),
            "x".repeat(60),
        );
    });

    it("a limit too small for any of the line keeps only the note of what was cut", () => {
        assert.equal(
            capLine("x".repeat(200), 20, (s) => s.length),
            " [... 200 characters cut ...] ",
        );
    });

    it("never splits a surrogate pair, at either end, whatever the limit, and still keeps a fair share of the line", () => {
        const lines = [
            "\u{1F600}".repeat(200),
            `a${"\u{1F600}".repeat(200)}`,
            `${"\u{1F600}".repeat(200)}a`,
            "\u{1F600}a".repeat(150),
            "a\u{1F600}".repeat(150),
        ];
        for (const line of lines)
            for (let limit = 60; limit < 400; limit++) {
                const capped = capLine(line, limit, (s) => s.length);
                assert.ok(capped.length <= limit, `${limit}: ${capped.length}`);
                // a pair at the edge costs one unit, not the line: past 100 units at least a third is used
                if (limit >= 100) assert.ok(capped.length >= limit / 3, `${limit}: only ${capped.length}`);
                assert.doesNotMatch(capped, LONE_SURROGATE, `limit ${limit}`);
                const { start, cut, end } = parts(capped);
                assert.equal(start.length + cut + end.length, line.length, `limit ${limit}`);
            }
    });
});

describe("capText caps each line and keeps the line breaks", () => {
    it("short lines as they are, a long one cut, as many lines as before", () => {
        const text = `first\n${"x".repeat(300)}\n\nlast`;
        const capped = capText(text, 100).split("\n");
        assert.equal(capped.length, 4);
        assert.deepEqual([capped[0], capped[2], capped[3]], ["first", "", "last"]);
        assert.ok(utf8Bytes(capped[1]) <= 100 && parts(capped[1]).cut > 0);
        assert.equal(capText("a\nb"), "a\nb");
        assert.equal(capText(`${"y".repeat(LINE_LIMIT + 1)}\n`).split("\n")[1], "");
        assert.ok(utf8Bytes(capText("y".repeat(LINE_LIMIT + 1))) <= LINE_LIMIT);
    });
});

describe("nameList: the first names, then how many more", () => {
    it("all of a short list; at most `shown`; the rest counted", () => {
        assert.equal(nameList([]), "");
        assert.equal(nameList(["a"]), "a");
        assert.equal(nameList(["a", "b", "c"], 2), "a, b ... and 1 more");
        assert.equal(nameList(["a", "b"], 2), "a, b");
        const many = Array.from({ length: LIST_SHOWN + 1 }, (_, i) => `n${i}`);
        assert.equal(nameList(many), `${many.slice(0, LIST_SHOWN).join(", ")} ... and 1 more`);
    });
    it("long names: each cut to a quarter of the list's room, and no more names than fit half a line", () => {
        const names = Array.from({ length: 10 }, (_, i) => `${i}${"n".repeat(2000)}`);
        const shown = nameList(names).split(", ");
        // at most 512 bytes a name: four fit in 2048 bytes with their separators, a fifth would not
        assert.equal(shown.length, 4);
        assert.match(shown[3], / \.\.\. and 6 more$/);
        for (const name of shown.slice(0, 3)) assert.ok(utf8Bytes(name) <= 512 && utf8Bytes(name) > 400);
        // a name's separator counts: eight names of 254 bytes fill the 2048 exactly, of 256 bytes only seven fit
        const sized = (bytes: number) => Array.from({ length: 10 }, (_, i) => `${i}${"n".repeat(bytes - 1)}`);
        assert.match(nameList(sized(254)), / \.\.\. and 2 more$/);
        assert.match(nameList(sized(256)), / \.\.\. and 3 more$/);
        // the first name is listed however long it is
        assert.equal(nameList(["x".repeat(2000)], 5).split(" [... ").length, 2);
        assert.doesNotMatch(nameList(["x".repeat(2000)], 5), /more$/);
    });
});

describe("pieces: a text whole, in short pieces", () => {
    it("a line break ends a piece; a long line is split every PIECE_UNITS code units; nothing is lost", () => {
        assert.deepEqual(pieces(""), []);
        assert.deepEqual(pieces("ab\ncd\n"), ["ab\n", "cd\n"]);
        assert.deepEqual(pieces("ab\n\ncd"), ["ab\n", "\n", "cd"]);
        assert.deepEqual(
            pieces("x".repeat(2 * PIECE_UNITS + 3)).map((p) => p.length),
            [PIECE_UNITS, PIECE_UNITS, 3],
        );
        assert.deepEqual(
            pieces(`${"x".repeat(PIECE_UNITS)}\n`).map((p) => p.length),
            [PIECE_UNITS, 1],
        );
    });
    it("a surrogate pair across a piece's end moves whole into the next piece", () => {
        const text = `${"x".repeat(PIECE_UNITS - 1)}\u{1F600}y`;
        const ps = pieces(text);
        assert.deepEqual(
            ps.map((p) => p.length),
            [PIECE_UNITS - 1, 3],
        );
        assert.equal(ps.join(""), text);
        // the pair at the very end of the text stays where it is
        assert.deepEqual(pieces(`${"x".repeat(PIECE_UNITS - 2)}\u{1F600}`), [
            `${"x".repeat(PIECE_UNITS - 2)}\u{1F600}`,
        ]);
    });
});

describe("capStrings: every string of a JSON value short enough for one line with its key", () => {
    it("strings in objects and arrays are capped by their JSON form; other values are kept", () => {
        const room = LINE_LIMIT - 256;
        // 3838 characters are 3840 bytes as JSON, the most kept
        const fits = "f".repeat(room - 2);
        const value = {
            a: fits,
            b: ["g".repeat(room - 1), 1, true, null],
            c: { d: "\u0001".repeat(1000) },
            e: 2.5,
            f: false,
            g: null,
        };
        const capped = capStrings(value);
        assert.equal(capped.a, fits);
        assert.notEqual(capped.b[0], value.b[0]);
        assert.ok(utf8Bytes(JSON.stringify(capped.b[0])) <= room);
        assert.deepEqual(capped.b.slice(1), [1, true, null]);
        // a control character is six bytes in JSON: 1000 of them do not fit
        assert.ok(utf8Bytes(JSON.stringify(capped.c.d)) <= room);
        assert.match(capped.c.d, /characters cut/);
        assert.deepEqual([capped.e, capped.f, capped.g], [2.5, false, null]);
        assert.equal(capStrings("short"), "short");
        assert.equal(capStrings(7), 7);
    });
});
