// The spec-lsp VS Code extension: starts `spec-lsp serve` over stdio, passes settings, shows
// stats. It holds no completion logic: vscode-languageclient 11 turns the server's
// textDocument/inlineCompletion answers into ghost text (Tab accepts, Alt+] cycles).
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  DocumentSelector,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';

const SECTION = 'specLsp';
const STATS_METHOD = 'specLsp/stats';
/**
 * The person brought an open document into view, or put the cursor somewhere in it: the server
 * evaluates its context, and the prompt at the cursor, while they read.
 */
const FOCUS_METHOD = 'specLsp/didFocus';
/** Extension settings whose change needs a new server process. */
const RESTART_KEYS = ['serverCommand', 'serverArgs', 'serverEnv', 'languages'];

/** The subset of `specLsp/stats` the status bar reads (the server sends more). */
interface Acceptance {
  shown?: number;
  accepted?: number;
  partial?: number;
  rate?: number | null;
}

/** The confidence gate: off for a model it was not fitted on (`why` says so). */
interface Gate {
  on?: boolean;
  threshold?: number;
  why?: string;
}

/** This machine's measured pace for the model; `advice` where it is too slow for it. */
interface Pace {
  decode_tok_s?: number;
  prompt_tok_s?: number;
  slow?: boolean;
  advice?: string | null;
}

interface Stats {
  gate?: Gate;
  pace?: Pace | null;
  acceptance?: Acceptance;
  acceptance_rate?: number;
  tokens_per_second?: number;
  requests?: number;
  tokens?: number;
  drafted?: number;
  accepted?: number;
  latency_ms_p50?: number | null;
  latency_ms_p95?: number | null;
  models?: string[];
  [key: string]: unknown;
}

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let status: vscode.StatusBarItem;
let pollTimer: NodeJS.Timeout | undefined;
let serverKeys: string[] = [];
/** Server settings sent last time, so that a setting reset to its default is sent too. */
let sentKeys = new Set<string>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  serverKeys = readServerKeys(context);
  output = vscode.window.createOutputChannel('spec-lsp', { log: true });
  status = vscode.window.createStatusBarItem('specLsp.status', vscode.StatusBarAlignment.Right, 100);
  status.name = 'spec-lsp';
  status.command = 'specLsp.showStats';
  context.subscriptions.push(
    output,
    status,
    vscode.commands.registerCommand('specLsp.restart', restart),
    vscode.commands.registerCommand('specLsp.showStats', showStats),
    vscode.commands.registerCommand('specLsp.toggle', toggle),
    vscode.workspace.onDidChangeConfiguration(onConfigurationChanged),
    vscode.window.onDidChangeActiveTextEditor(focused),
    vscode.window.onDidChangeTextEditorSelection(cursorMoved),
    { dispose: stopPolling },
  );
  status.show();
  await startClient();
}

/** A tab chosen: tell the server (documents opened before are already open there), and where the cursor is. */
function focused(editor: vscode.TextEditor | undefined): void {
  if (!editor || !client?.isRunning()) {
    return;
  }
  const converter = client.code2ProtocolConverter;
  const uri = converter.asUri(editor.document.uri);
  const position = converter.asPosition(editor.selection.active);
  void client.sendNotification(FOCUS_METHOD, { textDocument: { uri }, position });
}

/** The document's version at its last selection change (an edit in between: typing). */
const seenVersions = new WeakMap<vscode.TextDocument, number>();
let cursorTimer: NodeJS.Timeout | undefined;
/** How long the cursor rests before the server is told (arrow keys held: once). */
const CURSOR_REST_MS = 250;

/**
 * The cursor put somewhere by a click, a key or a command, not by typing (didChange tells
 * the server where an edit is): once it rests, tell the server, as for a tab chosen.
 */
function cursorMoved(event: vscode.TextEditorSelectionChangeEvent): void {
  const document = event.textEditor.document;
  const before = seenVersions.get(document);
  seenVersions.set(document, document.version);
  if ((before !== undefined && before !== document.version) || event.kind === undefined) {
    return; // (an edit moved it)
  }
  clearTimeout(cursorTimer);
  cursorTimer = setTimeout(() => {
    if (vscode.window.activeTextEditor === event.textEditor) {
      focused(event.textEditor);
    }
  }, CURSOR_REST_MS);
}

export async function deactivate(): Promise<void> {
  stopPolling();
  clearTimeout(cursorTimer);
  await client?.stop();
  client = undefined;
}

/** The server's setting names: the generated `specLsp-server` block of package.json. */
function readServerKeys(context: vscode.ExtensionContext): string[] {
  const blocks: Array<{ id?: string; properties?: Record<string, unknown> }> =
    context.extension.packageJSON.contributes?.configuration ?? [];
  const block = blocks.find((b) => b.id === 'specLsp-server');
  return Object.keys(block?.properties ?? {}).map((k) => k.slice(SECTION.length + 1));
}

/**
 * Server settings the user actually set (user, workspace or folder). Defaults are not sent,
 * so flags in `specLsp.serverArgs` and SPEC_LSP_* variables are not overridden by them.
 */
function explicitServerSettings(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const settings: Record<string, unknown> = {};
  for (const key of serverKeys) {
    const seen = cfg.inspect(key);
    const value = seen?.workspaceFolderValue ?? seen?.workspaceValue ?? seen?.globalValue;
    if (value !== undefined) {
      settings[key] = value;
    }
  }
  return settings;
}

function documentSelector(languages: string[]): DocumentSelector {
  const schemes = ['file', 'untitled'];
  if (languages.length === 0 || languages.includes('*')) {
    return schemes.map((scheme) => ({ scheme }));
  }
  return languages.flatMap((language) => schemes.map((scheme) => ({ scheme, language })));
}

async function startClient(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const command = cfg.get<string>('serverCommand', 'spec-lsp');
  const args = cfg.get<string[]>('serverArgs', ['serve']);
  const env = { ...process.env, ...cfg.get<Record<string, string>>('serverEnv', {}) };
  const serverOptions: ServerOptions = { command, args, options: { env } };
  const initializationOptions = explicitServerSettings();
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(cfg.get<string[]>('languages', ['*'])),
    initializationOptions,
    outputChannel: output,
    middleware: {
      // One model, one request per document at a time: by default the suggest menu does not
      // compete with the ghost text (the server answers only the newest request per document).
      provideCompletionItem: (document, position, context, token, next) =>
        vscode.workspace.getConfiguration(SECTION).get<boolean>('completionMenu', false)
          ? next(document, position, context, token)
          : undefined,
    },
  };
  client = new LanguageClient(SECTION, 'spec-lsp', serverOptions, clientOptions);
  client.onDidChangeState(() => updateStatus());
  sentKeys = new Set(Object.keys(initializationOptions));
  output.appendLine(`starting: ${command} ${args.join(' ')}`);
  try {
    await client.start();
  } catch (error) {
    updateStatus();
    const choice = await vscode.window.showErrorMessage(
      `spec-lsp: could not start \`${command} ${args.join(' ')}\`: ${error}. ` +
        'Set specLsp.serverCommand to the spec-lsp executable (e.g. <repo>/.venv/bin/spec-lsp).',
      'Open Settings',
    );
    if (choice === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'specLsp.server');
    }
    return;
  }
  // The server takes the focus from this notification once it has seen one (a didOpen alone
  // is then a peek or a preview): tell it which editor is in view now.
  focused(vscode.window.activeTextEditor);
  startPolling();
}

async function restart(): Promise<void> {
  stopPolling();
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch (error) {
      output.appendLine(`stopping the old server: ${error}`);
    }
  }
  await startClient();
}

async function onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
  if (!event.affectsConfiguration(SECTION)) {
    return;
  }
  if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
    await restart();
    return;
  }
  if (event.affectsConfiguration(`${SECTION}.statsIntervalMs`)) {
    startPolling();
  }
  if (serverKeys.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
    await sendSettings();
  }
  updateStatus();
}

/** workspace/didChangeConfiguration with the explicit settings, plus defaults for cleared ones. */
async function sendSettings(): Promise<void> {
  if (!client || client.state !== State.Running) {
    return;
  }
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const settings = explicitServerSettings();
  for (const key of sentKeys) {
    if (!(key in settings)) {
      settings[key] = cfg.get(key) ?? null;
    }
  }
  sentKeys = new Set(Object.keys(explicitServerSettings()));
  await client.sendNotification(DidChangeConfigurationNotification.type, {
    settings: { [SECTION]: settings },
  });
}

async function toggle(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const seen = cfg.inspect<boolean>('enable');
  const target =
    seen?.workspaceValue !== undefined
      ? vscode.ConfigurationTarget.Workspace
      : vscode.ConfigurationTarget.Global;
  const enabled = cfg.get<boolean>('enable', true);
  await cfg.update('enable', !enabled, target);
  vscode.window.setStatusBarMessage(`spec-lsp completions ${enabled ? 'off' : 'on'}`, 3000);
}

async function fetchStats(): Promise<Stats | undefined> {
  if (!client || client.state !== State.Running) {
    return undefined;
  }
  return client.sendRequest<Stats>(STATS_METHOD, null);
}

async function showStats(): Promise<void> {
  let stats: Stats | undefined;
  try {
    stats = await fetchStats();
  } catch (error) {
    void vscode.window.showErrorMessage(`spec-lsp: ${STATS_METHOD} failed: ${error}`);
    return;
  }
  if (!stats) {
    void vscode.window.showWarningMessage('spec-lsp: the server is not running.');
    return;
  }
  output.appendLine(`${STATS_METHOD} ${new Date().toISOString()}`);
  output.appendLine(JSON.stringify(stats, null, 2));
  updateStatus(stats);
  const choice = await vscode.window.showInformationMessage(`spec-lsp: ${summary(stats)}`, 'Details');
  if (choice === 'Details') {
    output.show(true);
  }
}

/** The share of decided suggestions the person accepted (whole or in part), or '-'. */
function keptRate(stats: Stats): string {
  const rate = stats.acceptance?.rate;
  return rate == null ? '-' : `${Math.round(rate * 100)}%`;
}

function summary(stats: Stats): string {
  const pct = Math.round((stats.acceptance_rate ?? 0) * 100);
  const tps = (stats.tokens_per_second ?? 0).toFixed(1);
  const p50 = stats.latency_ms_p50 == null ? '-' : `${stats.latency_ms_p50} ms`;
  const a: Acceptance = stats.acceptance ?? {};
  return (
    `suggestions accepted ${keptRate(stats)} (${(a.accepted ?? 0) + (a.partial ?? 0)}/` +
    `${a.shown ?? 0} shown), drafts accepted ${pct}% (${stats.accepted ?? 0}/` +
    `${stats.drafted ?? 0}), ${tps} tok/s, ${stats.requests ?? 0} completions, p50 latency ${p50}`
  );
}

function updateStatus(stats?: Stats): void {
  const enabled = vscode.workspace.getConfiguration(SECTION).get<boolean>('enable', true);
  const state = client?.state;
  if (state === undefined || state === State.Stopped) {
    status.text = '$(error) spec-lsp';
    status.tooltip = 'spec-lsp is not running (click for stats, or run "spec-lsp: Restart Server")';
  } else if (state === State.Starting) {
    status.text = '$(sync~spin) spec-lsp';
    status.tooltip = 'spec-lsp is starting';
  } else if (!enabled) {
    status.text = '$(circle-slash) spec-lsp';
    status.tooltip = 'spec-lsp completions are off ("spec-lsp: Toggle Completions")';
  } else if (stats && (stats.models ?? []).length === 0) {
    status.text = '$(sync~spin) spec-lsp: loading model';
    status.tooltip = 'spec-lsp is loading its models (completions start when they are ready)';
  } else if (stats) {
    // the person's acceptance of the suggestions beside the speed
    const slow = stats.pace?.advice ? '$(warning) ' : '';
    status.text = `${slow}$(sparkle) ${keptRate(stats)} · ${(stats.tokens_per_second ?? 0).toFixed(1)} tok/s`;
    status.tooltip =
      `spec-lsp: ${summary(stats)}\nmodels: ${(stats.models ?? []).join(', ') || '-'}` +
      `\n${gateLine(stats.gate)}` +
      (stats.pace?.advice ? `\n${stats.pace.advice}` : '');
  } else if (!status.text.startsWith('$(sparkle)')) {
    status.text = '$(sparkle) spec-lsp';
    status.tooltip = 'spec-lsp is running';
  }
}

/** The gate's line of the tooltip: its threshold, or why it is off. */
function gateLine(gate?: Gate): string {
  if (!gate) {
    return 'confidence gate: -';
  }
  if (gate.on) {
    return `confidence gate: on (threshold ${gate.threshold})`;
  }
  return `confidence gate: off${gate.why ? ` (${gate.why})` : ''}`;
}

function startPolling(): void {
  stopPolling();
  const interval = vscode.workspace.getConfiguration(SECTION).get<number>('statsIntervalMs', 3000);
  updateStatus();
  if (interval <= 0) {
    return;
  }
  pollTimer = setInterval(async () => {
    try {
      updateStatus(await fetchStats());
    } catch {
      updateStatus();
    }
  }, interval);
}

function stopPolling(): void {
  if (pollTimer) {
    clearInterval(pollTimer);
    pollTimer = undefined;
  }
}
