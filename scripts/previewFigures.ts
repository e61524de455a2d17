// The bench's preview figures: one preview's time and memory, and several runs of it as one figure.

/** One preview: its wall time, the peak RSS of its process tree, and each process's own peak in MB by what it runs. */
export interface PreviewRun {
    seconds: number;
    peakRssMB: number;
    byProcess: Record<string, number>;
}

/** Several runs of one preview: the medians (--preview-runs, default 3), each process's largest peak, and every run in order. */
export interface PreviewFigures extends PreviewRun {
    runs: { seconds: number; peakRssMB: number }[];
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Several previews of one stack as one figure: the medians, the largest peak per process, and every run. */
export function previewFigures(runs: PreviewRun[]): PreviewFigures {
    const byProcess: Record<string, number> = {};
    for (const r of runs)
        for (const [name, mb] of Object.entries(r.byProcess)) byProcess[name] = Math.max(byProcess[name] ?? 0, mb);
    return {
        seconds: median(runs.map((r) => r.seconds)),
        peakRssMB: Math.round(median(runs.map((r) => r.peakRssMB))),
        byProcess,
        runs: runs.map((r) => ({ seconds: r.seconds, peakRssMB: r.peakRssMB })),
    };
}
