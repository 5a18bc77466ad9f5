// Regenerates the pi 0.73 session fixtures used by tests/test_session_pi_compat.py.
//
//   node tests/data/session/make_pi_fixtures.mjs <pi session-manager.js> <output dir>
//
// Drives pi's own SessionManager through every entry type, branches, labels, compaction and
// branch summaries, then writes the session file pi produced and what pi resolves from it
// (context at the leaf and at other entries, tree, labels, name) as JSON next to it.
import { mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [, , distPath, outDir] = process.argv;
const { SessionManager, migrateSessionEntries } = await import(pathToFileURL(distPath).href);
mkdirSync(outDir, { recursive: true });
const work = join(outDir, "work");
mkdirSync(work, { recursive: true });

let clock = 1760000000000;
const tick = () => (clock += 1000);
const usage = (input, output) => ({
  input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
  cost: { input: input * 0.000003, output: output * 0.000015, cacheRead: 0, cacheWrite: 0,
          total: input * 0.000003 + output * 0.000015 },
});
const assistant = (content, stopReason = "stop") => ({
  role: "assistant", content, api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-5", usage: usage(1200, 35), stopReason, timestamp: tick(),
});

const sm = SessionManager.create("/home/user/project", work);
const ids = {};
ids.model = sm.appendModelChange("anthropic", "claude-sonnet-4-5");
ids.thinking = sm.appendThinkingLevelChange("high");
ids.u1 = sm.appendMessage({ role: "user", content: "Read a.py and fix the bug", timestamp: tick() });
ids.a1 = sm.appendMessage(assistant([
  { type: "thinking", thinking: "Look at the file first.", thinkingSignature: "c2lnbmF0dXJl" },
  { type: "text", text: "Reading it." },
  { type: "toolCall", id: "toolu_01", name: "read", arguments: { path: "a.py", offset: 1, limit: null } },
], "toolUse"));
ids.r1 = sm.appendMessage({
  role: "toolResult", toolCallId: "toolu_01", toolName: "read",
  content: [{ type: "text", text: "def f():\n\treturn 1/0  # \u00e9\u2028\"quoted\"" }],
  details: { lines: 2, truncated: false }, isError: false, timestamp: tick(),
});
ids.a2 = sm.appendMessage(assistant([{ type: "text", text: "Found it: a division by zero." }]));
ids.bash = sm.appendMessage({
  role: "bashExecution", command: "pytest -q", output: "1 passed", exitCode: 0, cancelled: false,
  truncated: false, timestamp: tick(),
});
ids.customMessage = sm.appendCustomMessageEntry("reminder", "Remember the style guide.", true, { source: "plugin" });
ids.customMessage2 = sm.appendCustomMessageEntry("image-note", [{ type: "text", text: "see image" },
  { type: "image", data: "aGVsbG8=", mimeType: "image/png" }], false);
ids.custom = sm.appendCustomEntry("plugin-state", { count: 3, nested: { ok: true, none: null } });
ids.customNoData = sm.appendCustomEntry("marker");
ids.label1 = sm.appendLabelChange(ids.u1, "start");
ids.label2 = sm.appendLabelChange(ids.a2, "diagnosis");
ids.labelClear = sm.appendLabelChange(ids.a2, undefined);
ids.label3 = sm.appendLabelChange(ids.r1, "file");
ids.name1 = sm.appendSessionInfo("  Fix the bug  ");
ids.u2 = sm.appendMessage({ role: "user", content: [{ type: "text", text: "Now add a test" }], timestamp: tick() });
ids.a3 = sm.appendMessage(assistant([{ type: "text", text: "Test added." }]));
ids.compaction = sm.appendCompaction("The user asked to fix a.py; the bug was a division by zero.",
  ids.u2, 45000, { readFiles: ["a.py"], modifiedFiles: ["a.py", "test_a.py"] });
ids.u3 = sm.appendMessage({ role: "user", content: "Run the tests again", timestamp: tick() });
ids.a4 = sm.appendMessage(assistant([{ type: "text", text: "All green." }]));
ids.modelChange = sm.appendModelChange("openai", "gpt-4o");
ids.thinking2 = sm.appendThinkingLevelChange("low");
// branch back to a1 and summarise the abandoned path
ids.summary = sm.branchWithSummary(ids.a2, "Explored running the tests; all passed.", { readFiles: [] }, true);
ids.u4 = sm.appendMessage({ role: "user", content: "Try another approach", timestamp: tick() });
ids.a5 = sm.appendMessage(assistant([{ type: "text", text: "Another approach." }]));
ids.emptySummary = sm.branchWithSummary(ids.u4, "");
ids.rootSummary = sm.branchWithSummary(null, "Started over from scratch.");
ids.u5 = sm.appendMessage({ role: "user", content: "Fresh start", timestamp: tick() });
ids.name2 = sm.appendSessionInfo("Renamed session");
ids.aLast = sm.appendMessage(assistant([{ type: "text", text: "Fresh reply." }]));

const file = sm.getSessionFile();
const target = join(outDir, "pi073_session.jsonl");
renameSync(file, target);

const summary = (s) => ({
  leafId: s.getLeafId(),
  sessionName: s.getSessionName() ?? null,
  header: s.getHeader(),
  contexts: Object.fromEntries(
    [null, ...s.getEntries().map((e) => e.id)].map((id) => {
      if (id !== null) s.branch(id); else s.resetLeaf();
      const c = s.buildSessionContext();
      return [id ?? "null", { messages: c.messages, thinkingLevel: c.thinkingLevel, model: c.model }];
    }),
  ),
  tree: s.getTree().map(function walk(node) {
    return { id: node.entry.id, label: node.label ?? null, children: node.children.map(walk) };
  }),
  labels: Object.fromEntries(s.getEntries().map((e) => [e.id, s.getLabel(e.id) ?? null])),
});
const reopened = SessionManager.open(target, work);
const expected = summary(reopened);
expected.ids = ids;
writeFileSync(join(outDir, "pi073_session.expected.json"), JSON.stringify(expected, null, 1));

// createBranchedSession from the compaction's child: path + re-created labels
const branching = SessionManager.open(target, work);
const branchedFile = branching.createBranchedSession(ids.a4);
renameSync(branchedFile, join(outDir, "pi073_branched.jsonl"));

// migration of a v1 file, as pi rewrites it on load
const v1 = [
  { type: "session", id: "v1-session", timestamp: "2024-12-01T10:00:00.000Z", cwd: "/old" },
  { type: "message", timestamp: "2024-12-01T10:00:01.000Z", message: { role: "user", content: "one", timestamp: 1 } },
  { type: "message", timestamp: "2024-12-01T10:00:02.000Z", message: { role: "assistant", content: [{ type: "text", text: "two" }], api: "anthropic-messages", provider: "anthropic", model: "m", usage: usage(1, 1), stopReason: "stop", timestamp: 2 } },
  { type: "message", timestamp: "2024-12-01T10:00:03.000Z", message: { role: "hookMessage", customType: "h", content: "hook", display: true, timestamp: 3 } },
  { type: "compaction", timestamp: "2024-12-01T10:00:04.000Z", summary: "sum", firstKeptEntryIndex: 2, tokensBefore: 10 },
  { type: "thinking_level_change", timestamp: "2024-12-01T10:00:05.000Z", thinkingLevel: "medium" },
];
const v1Text = v1.map((e) => JSON.stringify(e)).join("\n") + "\n";
writeFileSync(join(outDir, "pi072_v1_session.jsonl"), v1Text);
const migrated = JSON.parse(JSON.stringify(v1));
migrateSessionEntries(migrated);
writeFileSync(join(outDir, "pi072_v1_session.migrated.jsonl"), migrated.map((e) => JSON.stringify(e)).join("\n") + "\n");
for (const f of readdirSync(work)) console.error("left in work dir:", f);
