// groundcode for VS Code: starts `groundcode lsp` (the editor's unsaved buffers, inline
// completions grounded by the analyzer) through vscode-languageclient 11 (LSP 3.18 inline
// completions), with settings, a status bar item, an output channel and workspace trust.
// The trust VS Code gives the open folder is the trust the server gives its root: untrusted,
// nothing the workspace ships runs (its .venv is read as files). docs/EDITORS.md.
"use strict";
const vscode = require("vscode");
const { LanguageClient, State } = require("vscode-languageclient/node");

const LANGUAGES = ["python", "typescript", "typescriptreact", "javascript", "javascriptreact"];
let client = null;
let status = null;
let output = null;

// what the status bar says: starting, ready, or the last suggestion's grounding
function show(text, tooltip, warn) {
  status.text = text;
  status.tooltip = tooltip || "groundcode";
  status.backgroundColor = warn ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  status.show();
}

// the server attaches `groundcode.grounded` to each inline item; its argument says which names
// the analyzer confirmed or chose (server/lsp.py)
function grounding(items) {
  const list = Array.isArray(items) ? items : (items && items.items) || [];
  for (const it of list) {
    const args = it && it.command && it.command.arguments;
    if (args && args[0] && Array.isArray(args[0].grounded)) return args[0];
  }
  return null;
}

// VS Code waits 50 ms after a keystroke before it asks (and cancels a request a newer one
// supersedes): the server's own wait would only add to it. extraArgs come last and win.
function serverOptions(cfg) {
  const args = ["lsp", "--model", cfg.get("model"), "--analyzer", cfg.get("analyzer"), "--debounce-ms", "0",
                ...cfg.get("extraArgs")];
  return { command: cfg.get("command"), args, options: { env: process.env } };
}

// The model loads inside the server after it starts: its health (`groundcode.health`: the
// model loaded, the analyzers running) is asked each second until the model is in.
async function watchLoad(c, cfg, trusted) {
  const where = trusted ? "trusted" : "untrusted";
  for (let i = 0; i < 600 && client === c; i++) {
    let h = null;
    try {
      h = await c.sendRequest("workspace/executeCommand", { command: "groundcode.health", arguments: [] });
    } catch (e) {
      output.appendLine(`health: ${e && e.message}`);
      return;
    }
    if (h && h.model_loaded) {
      const an = (h.analyzers || []).map((a) => a.name).join(", ") || "starting at the first question";
      show("$(pass) groundcode", `groundcode: ready (${cfg.get("model")} loaded; analyzers: ${an}; ${where} workspace)`);
      return;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  if (client === c) show("$(warning) groundcode", "groundcode: the model is not loaded after 10 minutes (see the log)", true);
}

async function start() {
  const cfg = vscode.workspace.getConfiguration("groundcode");
  const trusted = vscode.workspace.isTrusted;
  const python = trusted ? cfg.get("python") || undefined : undefined;
  show("$(sync~spin) groundcode", "groundcode: starting the server and loading the model");
  client = new LanguageClient("groundcode", "groundcode", serverOptions(cfg), {
    documentSelector: LANGUAGES.map((language) => ({ scheme: "file", language })),
    outputChannel: output,
    initializationOptions: { trust: trusted, python },
    middleware: {
      // the server's completion item is its inline suggestion for clients without inline
      // completion: with ghost text on, asking for both would make each request cancel the other
      provideCompletionItem: (document, position, context, token, next) =>
        vscode.workspace.getConfiguration("editor", document).get("inlineSuggest.enabled", true)
          ? undefined : next(document, position, context, token),
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        const items = await next(document, position, context, token);
        const g = grounding(items);
        if (g) {
          const t = g.timings || {};
          output.appendLine(`suggestion ${document.uri.fsPath}:${position.line + 1}:${position.character} ` +
            `first token ${t.first_token_ms} ms, answer ${t.total_ms} ms, ${g.finish_reason}; ` +
            `grounded: ${g.grounded.map((x) => x.chosen || (x.failed_open ? "(failed open)" : "(confirmed)")).join(", ") || "-"}`);
          const names = g.grounded.map((x) => x.chosen).filter(Boolean);
          const open = g.grounded.filter((x) => x.failed_open).length;
          if (names.length) show(`$(check) groundcode: ${names.join(", ")}`, "the analyzer confirmed or chose these names in the last suggestion");
          else show(open ? "$(warning) groundcode: not grounded" : "$(circle-outline) groundcode",
                    open ? "the analyzer could not answer in time: the last suggestion is not grounded" : "no member or name to ground in the last suggestion", open > 0);
        }
        return items;
      },
    },
  });
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      show("$(sync~spin) groundcode", `groundcode: the server runs; loading ${cfg.get("model")}`);
      watchLoad(client, cfg, trusted);
    } else if (e.newState === State.Stopped) show("$(error) groundcode", "groundcode: the server stopped (see its log)", true);
  });
  try {
    await client.start();
  } catch (e) {
    show("$(error) groundcode", String(e && e.message), true);
    vscode.window.showErrorMessage(`groundcode: could not start \`${cfg.get("command")} lsp\`: ${e && e.message}. ` +
      "Set groundcode.command to the absolute path of the groundcode executable.", "Open Settings", "Show Log")
      .then((pick) => {
        if (pick === "Open Settings") vscode.commands.executeCommand("workbench.action.openSettings", "groundcode");
        if (pick === "Show Log") output.show();
      });
  }
}

async function restart() {
  if (client) {
    const c = client;
    client = null;
    try { await c.stop(); } catch (e) { output.appendLine(`stop: ${e && e.message}`); }
  }
  await start();
}

exports.activate = async (context) => {
  output = vscode.window.createOutputChannel("groundcode", { log: true });   // vscode-languageclient 11 logs through .error/.info
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.command = "groundcode.showLog";
  context.subscriptions.push(output, status,
    vscode.commands.registerCommand("groundcode.restart", restart),
    vscode.commands.registerCommand("groundcode.showLog", () => output.show()),
    // trust granted later: the server restarts with it (never the other way: trust is not revoked live)
    vscode.workspace.onDidGrantWorkspaceTrust(restart),
    vscode.workspace.onDidChangeConfiguration((e) => { if (e.affectsConfiguration("groundcode")) restart(); }));
  await start();
};

exports.deactivate = () => (client ? client.stop() : undefined);
exports._test = { grounding, serverOptions };
