// PLACEHOLDER (i42-cli): replaced at merge by the activities helper's activities.ts.
import type { StackActivities } from "./contract.js";

export function stackActivities(): StackActivities {
    const missing = () => Promise.reject(new Error("placeholder: the fleet's stack activities are not merged yet"));
    return { previewStack: missing, upStack: missing };
}
