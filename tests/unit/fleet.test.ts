// components/core/fleet.ts: the fleet file's rules and findings, the fleet's workflow id, and the
// scheduler that moves waves in order.
import assert from "node:assert/strict";
import {
    fleetFileSchema,
    fleetId,
    nextSteps,
    parseFleet,
    type Fleet,
    type FleetFinding,
    type StackState,
} from "../../components/core/fleet.js";

const DIR = "/repo/fleets";

const ISSUE_EXAMPLE = `waves:
  - name: canary
    stacks:
      - { dir: ./infra, stack: dev }
  - name: rest
    maxParallel: 2
    soak: 10m
    stacks:
      - { dir: ./infra, stack: staging }
      - { dir: ./infra, stack: prod }
`;

const parse = (text: string, dir = DIR): Fleet => {
    const { fleet, findings } = parseFleet(text, dir);
    assert.deepEqual(findings, []);
    assert.ok(fleet);
    return fleet;
};

const findings = (text: string): FleetFinding[] => {
    const parsed = parseFleet(text, DIR);
    assert.equal(parsed.fleet, undefined, "no fleet when there are findings");
    assert.ok(parsed.findings.length > 0);
    return parsed.findings;
};

/** The one finding of `text`, by field, with its message matching `pattern`. */
const oneFinding = (text: string, field: string, pattern: RegExp, line?: number) => {
    const all = findings(text);
    assert.equal(all.length, 1, JSON.stringify(all));
    assert.equal(all[0].field, field);
    assert.match(all[0].message, pattern);
    if (line !== undefined) assert.equal(all[0].line, line);
};

describe("parseFleet: the fleet file", () => {
    it("reads the issue's example: dirs resolved against the file's folder, defaults applied, soak in seconds", () => {
        assert.deepEqual(parse(ISSUE_EXAMPLE), {
            waves: [
                {
                    name: "canary",
                    maxParallel: 1,
                    soakSeconds: 0,
                    stacks: [{ dir: "/repo/fleets/infra", stack: "dev", key: "dev@/repo/fleets/infra" }],
                },
                {
                    name: "rest",
                    maxParallel: 2,
                    soakSeconds: 600,
                    stacks: [
                        { dir: "/repo/fleets/infra", stack: "staging", key: "staging@/repo/fleets/infra" },
                        { dir: "/repo/fleets/infra", stack: "prod", key: "prod@/repo/fleets/infra" },
                    ],
                },
            ],
        });
    });

    it("keeps an absolute dir, normalised, and accepts soak: 0 and an org/project/stack name", () => {
        const fleet = parse(
            "waves:\n  - name: a\n    soak: 0\n    stacks: [{ dir: /abs/x/../infra/, stack: org/p/prod }]\n",
        );
        assert.deepEqual(fleet.waves[0].stacks[0], {
            dir: "/abs/infra",
            stack: "org/p/prod",
            key: "org/p/prod@/abs/infra",
        });
        assert.equal(fleet.waves[0].soakSeconds, 0);
    });

    it("every field has a description", () => {
        const wave = fleetFileSchema.shape.waves.element;
        assert.ok(fleetFileSchema.description);
        for (const [key, field] of Object.entries(wave.shape)) assert.ok(field.description, `waves[].${key}`);
        for (const [key, field] of Object.entries(wave.shape.stacks.element.shape))
            assert.ok(field.description, `waves[].stacks[].${key}`);
    });

    it("a YAML error names its line", () => {
        assert.deepEqual(findings("waves:\n  - name: a\n   stacks: []\n"), [
            {
                field: "fleet file",
                line: 3,
                message: "line 3: Sequence item without - indicator; fix the YAML there",
            },
        ]);
        assert.equal(findings("waves:\n  - name: canary\n    stacks: [ { dir: ./infra, stack: dev }\n")[0].line, 4);
    });

    it("a key given twice is a YAML error on its line", () => {
        oneFinding(
            "waves:\n  - name: a\n    name: b\n    stacks: [{ dir: x, stack: s }]\n",
            "fleet file",
            /line 3: .*unique/,
            3,
        );
    });

    it("an empty file or one without waves: at least one wave", () => {
        oneFinding("", "waves", /^waves must be a list of waves, e.g. - \{ name: canary/);
        oneFinding("waves:\n", "waves", /^waves must be a list of waves/, 1);
        oneFinding("waves: []\n", "waves", /^a fleet must list at least one wave/, 1);
    });

    it("a file that is not a mapping", () => {
        oneFinding("- name: a\n", "fleet file", /must be a mapping with waves/);
    });

    it("a misspelt key is named, at any level", () => {
        oneFinding(
            "waves: [{ name: a, stacks: [{ dir: x, stack: s }] }]\nwave: []\n",
            "fleet file",
            /unknown field\(s\) "wave": check the spelling/,
            2,
        );
        oneFinding(
            "waves:\n  - name: a\n    maxparallel: 2\n    stacks: [{ dir: x, stack: s }]\n",
            "waves[0]",
            /unknown field\(s\) "maxparallel": check the spelling/,
            3,
        );
        assert.deepEqual(findings("waves:\n  - name: a\n    stacks:\n      - { dir: x, stak: s }\n"), [
            { field: "waves[0].stacks[0].stack", message: "stack is required: the stack's name, e.g. prod", line: 4 },
            { field: "waves[0].stacks[0]", message: 'unknown field(s) "stak": check the spelling', line: 4 },
        ]);
    });

    it("a wave name must be DNS-label-like", () => {
        for (const name of ["Canary", "-a", "a_b", "a".repeat(64)])
            oneFinding(
                `waves: [{ name: ${name}, stacks: [{ dir: x, stack: s }] }]\n`,
                "waves[0].name",
                /wave name must be lower-case/,
            );
        oneFinding(
            "waves: [{ stacks: [{ dir: x, stack: s }] }]\n",
            "waves[0].name",
            /a wave needs a name, e.g. canary/,
        );
    });

    it("wave names are unique, the repeat naming the first", () => {
        oneFinding(
            "waves:\n  - { name: a, stacks: [{ dir: x, stack: s }] }\n  - { name: a, stacks: [{ dir: x, stack: t }] }\n",
            "waves[1].name",
            /wave name a is already used by waves\[0\]; give each wave its own name/,
            3,
        );
    });

    it("a wave lists at least one stack", () => {
        oneFinding("waves: [{ name: a, stacks: [] }]\n", "waves[0].stacks", /a wave must list at least one stack/);
        oneFinding("waves: [{ name: a }]\n", "waves[0].stacks", /stacks must be a list of \{ dir, stack \}/);
    });

    it("a stack needs a dir and a stack name", () => {
        oneFinding("waves: [{ name: a, stacks: [{ stack: s }] }]\n", "waves[0].stacks[0].dir", /dir is required/);
        oneFinding(
            "waves: [{ name: a, stacks: [{ dir: '  ', stack: s }] }]\n",
            "waves[0].stacks[0].dir",
            /dir is required/,
        );
        oneFinding("waves: [{ name: a, stacks: [{ dir: x }] }]\n", "waves[0].stacks[0].stack", /stack is required/);
        oneFinding(
            "waves: [{ name: a, stacks: [{ dir: 3, stack: s }] }]\n",
            "waves[0].stacks[0].dir",
            /dir must be text, not 3; dir is required/,
        );
        oneFinding(
            "waves: [{ name: a, stacks: [s] }]\n",
            "waves[0].stacks[0]",
            /a stack must be a mapping, e.g. \{ dir: .\/infra, stack: dev \}/,
        );
        oneFinding("waves: [canary]\n", "waves[0]", /a wave must be a mapping/);
        oneFinding(
            "waves: [{ name: a, stacks: [{ dir: x, stack: 'my stack' }] }]\n",
            "waves[0].stacks[0].stack",
            /Pulumi stack name/,
        );
    });

    it("a stack appears once in the fleet, compared by resolved dir; the repeat names both places", () => {
        oneFinding(
            "waves:\n  - { name: a, stacks: [{ dir: ./infra, stack: s }] }\n  - { name: b, stacks: [{ dir: t, stack: x }, { dir: infra/, stack: s }] }\n",
            "waves[1].stacks[1]",
            /stack s@\/repo\/fleets\/infra is already listed at waves\[0\]\.stacks\[0\]; list each stack once/,
            3,
        );
        // the same name in another project is another stack
        parse("waves: [{ name: a, stacks: [{ dir: ./one, stack: s }, { dir: ./two, stack: s }] }]\n");
    });

    it("maxParallel is a whole number of at least 1", () => {
        for (const v of ["0", "-1", "1.5", "two"])
            oneFinding(
                `waves: [{ name: a, maxParallel: ${v}, stacks: [{ dir: x, stack: s }] }]\n`,
                "waves[0].maxParallel",
                /maxParallel must be a whole number of at least 1/,
            );
    });

    it("soak is a non-negative duration", () => {
        for (const v of ["10", "-1m", "ten", "5"])
            oneFinding(
                `waves: [{ name: a, soak: ${v}, stacks: [{ dir: x, stack: s }] }]\n`,
                "waves[0].soak",
                /is not a duration; write it like 30s, 10m or 1h30m/,
            );
        assert.equal(
            parse("waves: [{ name: a, soak: 1h30m, stacks: [{ dir: x, stack: s }] }]\n").waves[0].soakSeconds,
            5400,
        );
    });

    it("reports every problem at once", () => {
        const all = findings(
            "waves:\n  - { name: A, stacks: [{ dir: x, stack: s }] }\n  - { name: b, maxParallel: 0, stacks: [{ dir: x, stack: s }] }\n",
        );
        assert.deepEqual(
            all.map((f) => f.field),
            ["waves[0].name", "waves[1].maxParallel", "waves[1].stacks[0]"],
        );
    });
});

describe("fleetId: the fleet's workflow id", () => {
    const id = fleetId(parse(ISSUE_EXAMPLE), "nftables");

    it("is short and readable: kpm-fleet-<first wave>-<hash12>", () => {
        assert.match(id, /^kpm-fleet-canary-[0-9a-f]{12}$/);
    });

    it("is the same for the same content: comments, spacing, written defaults and the dir's spelling aside", () => {
        const same = `# the same fleet
waves:
  - name: canary
    maxParallel: 1
    soak: 0s
    stacks: [{ dir: infra/, stack: dev }]
  - { name: rest, maxParallel: 2, soak: 600s, stacks: [{ dir: ./x/../infra, stack: staging }, { dir: /repo/fleets/infra, stack: prod }] }
`;
        assert.equal(fleetId(parse(same), "nftables"), id);
    });

    it("changes with the target, the order, the stacks, the settings or the file's folder", () => {
        const others = [
            fleetId(parse(ISSUE_EXAMPLE), "iptables"),
            fleetId(parse(ISSUE_EXAMPLE.replace("staging", "qa")), "nftables"),
            fleetId(parse(ISSUE_EXAMPLE.replace("maxParallel: 2", "maxParallel: 3")), "nftables"),
            fleetId(parse(ISSUE_EXAMPLE.replace("soak: 10m", "soak: 11m")), "nftables"),
            fleetId(
                parse(
                    ISSUE_EXAMPLE.replace("stack: staging }", "stack: X }")
                        .replace("stack: prod }", "stack: staging }")
                        .replace("stack: X }", "stack: prod }"),
                ),
                "nftables",
            ),
            fleetId(parse(ISSUE_EXAMPLE, "/elsewhere"), "nftables"),
        ];
        assert.equal(new Set([id, ...others]).size, others.length + 1);
    });
});

describe("nextSteps: the scheduler", () => {
    const fleet = parse(`waves:
  - { name: canary, stacks: [{ dir: i, stack: dev }] }
  - { name: rest, maxParallel: 2, soak: 10m, stacks: [{ dir: i, stack: a }, { dir: i, stack: b }, { dir: i, stack: c }] }
  - { name: last, soak: 1h, stacks: [{ dir: i, stack: z }] }
`);
    const k = (stack: string) => `${stack}@/repo/fleets/i`;
    const states = (s: Record<string, StackState>) => Object.fromEntries(Object.entries(s).map(([n, v]) => [k(n), v]));
    const names = (stacks: { stack: string }[]) => stacks.map((s) => s.stack);
    const NOW = 1_000_000;

    it("starts with the first wave's first stack only", () => {
        const step = nextSteps(fleet, { stacks: {}, now: NOW });
        assert.equal(step.kind, "run");
        assert.deepEqual(step.kind === "run" && [step.wave, names(step.start)], ["canary", ["dev"]]);
    });

    it("a wave starts only after every earlier stack succeeded (or was skipped)", () => {
        const running = nextSteps(fleet, { stacks: states({ dev: "running" }), now: NOW });
        assert.deepEqual(running.kind === "run" && [running.wave, names(running.start), names(running.running)], [
            "canary",
            [],
            ["dev"],
        ]);
        for (const dev of ["succeeded", "skipped"] as const) {
            const step = nextSteps(fleet, { stacks: states({ dev }), now: NOW });
            assert.deepEqual(step.kind === "run" && [step.wave, names(step.start)], ["rest", ["a", "b"]]);
        }
    });

    it("runs at most maxParallel stacks of a wave at once", () => {
        const full = nextSteps(fleet, { stacks: states({ dev: "succeeded", a: "running", b: "running" }), now: NOW });
        assert.deepEqual(full.kind === "run" && [names(full.start), names(full.running)], [[], ["a", "b"]]);
        const one = nextSteps(fleet, { stacks: states({ dev: "succeeded", a: "succeeded", b: "running" }), now: NOW });
        assert.deepEqual(one.kind === "run" && [names(one.start), names(one.running)], [["c"], ["b"]]);
    });

    it("stops at a failed stack, naming it; nothing new starts and later waves never do", () => {
        const step = nextSteps(fleet, { stacks: states({ dev: "succeeded", a: "failed", b: "running" }), now: NOW });
        assert.deepEqual(step, {
            kind: "stopped",
            wave: "rest",
            failed: [fleet.waves[1].stacks[0]],
            running: [fleet.waves[1].stacks[1]],
        });
        const after = nextSteps(fleet, {
            stacks: states({ dev: "succeeded", a: "failed", b: "succeeded", c: "succeeded" }),
            now: NOW,
        });
        assert.equal(after.kind, "stopped");
    });

    it("a retried stack (back to pending) or a skipped one lets the wave go on", () => {
        const retried = nextSteps(fleet, {
            stacks: states({ dev: "succeeded", a: "pending", b: "succeeded" }),
            now: NOW,
        });
        assert.deepEqual(retried.kind === "run" && names(retried.start), ["a", "c"]);
        const skipped = nextSteps(fleet, {
            stacks: states({ dev: "succeeded", a: "skipped", b: "succeeded", c: "succeeded" }),
            now: NOW,
        });
        assert.equal(skipped.kind, "soak");
    });

    it("soaks after a wave: until now + soak the first time, then until the recorded end", () => {
        const done = states({ dev: "succeeded", a: "succeeded", b: "succeeded", c: "succeeded" });
        assert.deepEqual(nextSteps(fleet, { stacks: done, now: NOW }), {
            kind: "soak",
            wave: "rest",
            until: NOW + 600_000,
        });
        const soakUntil = { rest: NOW + 600_000 };
        assert.deepEqual(nextSteps(fleet, { stacks: done, soakUntil, now: NOW + 599_999 }), {
            kind: "soak",
            wave: "rest",
            until: NOW + 600_000,
        });
        const next = nextSteps(fleet, { stacks: done, soakUntil, now: NOW + 600_000 });
        assert.deepEqual(next.kind === "run" && [next.wave, names(next.start)], ["last", ["z"]]);
    });

    it("no soak after a wave whose stacks were all skipped", () => {
        const step = nextSteps(fleet, {
            stacks: states({ dev: "succeeded", a: "skipped", b: "skipped", c: "skipped" }),
            now: NOW,
        });
        assert.deepEqual(step.kind === "run" && step.wave, "last");
    });

    it("is done when every wave succeeded, without waiting for the last wave's soak", () => {
        const all = states({ dev: "succeeded", a: "succeeded", b: "skipped", c: "succeeded", z: "succeeded" });
        assert.deepEqual(nextSteps(fleet, { stacks: all, soakUntil: { rest: NOW }, now: NOW }), { kind: "done" });
    });
});
