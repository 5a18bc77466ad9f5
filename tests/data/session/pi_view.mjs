// Prints what pi 0.73 resolves from a session file, as JSON, for tests/test_session_pi_compat.py:
//
//   node tests/data/session/pi_view.mjs <pi session-manager.js> <session file>
//
// leafId, sessionName, header, the context at the leaf and at every entry, the tree and labels.
import { pathToFileURL } from "node:url";

const [, , distPath, file] = process.argv;
const { SessionManager } = await import(pathToFileURL(distPath).href);
const s = SessionManager.open(file);
const leafId = s.getLeafId();
const leafContext = s.buildSessionContext();
const view = {
  leafId,
  sessionName: s.getSessionName() ?? null,
  header: s.getHeader(),
  entryIds: s.getEntries().map((e) => e.id),
  leafContext: { messages: leafContext.messages, thinkingLevel: leafContext.thinkingLevel, model: leafContext.model },
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
};
process.stdout.write(JSON.stringify(view));
