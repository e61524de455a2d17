// The bench's preview figures (scripts/previewFigures.ts): several previews of one stack as one figure.
import assert from "node:assert/strict";
import { median, previewFigures } from "../../scripts/previewFigures.js";

describe("bench: preview figures over several runs", () => {
    it("takes the middle value of an odd count and the mean of the two middle ones of an even count, whatever the order", () => {
        assert.equal(median([9.4, 5.6, 7.1]), 7.1);
        assert.equal(median([6.5, 8.6, 5.0, 7.0]), 6.75);
        assert.equal(median([3]), 3);
    });

    it("reports the median time and memory, the largest peak of each process over the runs, and every run in order", () => {
        const f = previewFigures([
            { seconds: 8.6, peakRssMB: 566, byProcess: { "node index.js": 247, pulumi: 114 } },
            { seconds: 6.5, peakRssMB: 570, byProcess: { "node index.js": 249, pulumi: 110 } },
            { seconds: 5.9, peakRssMB: 560, byProcess: { "node index.js": 240, "node commandStandin.js": 69 } },
        ]);
        assert.deepEqual(f, {
            seconds: 6.5,
            peakRssMB: 566,
            byProcess: { "node index.js": 249, pulumi: 114, "node commandStandin.js": 69 },
            runs: [
                { seconds: 8.6, peakRssMB: 566 },
                { seconds: 6.5, peakRssMB: 570 },
                { seconds: 5.9, peakRssMB: 560 },
            ],
        });
    });
});
