// End-to-end test in real VS Code: code-server (VS Code's workbench and extension host, in a
// browser) with the packaged spec-lsp .vsix installed, driven by Debian's chromium through
// playwright-core. Open a Python file, type, see the ghost text, press Tab, check the saved
// file, check the status bar stats and the commands; screenshots go to $SPEC_LSP_E2E_OUT.
//
// Run through editors/scripts/run-vscode-e2e.sh (it installs everything and sets the paths):
//   make -C editors vscode-e2e                                # fake backend (seconds)
//   make -C editors vscode-e2e SPEC_LSP_E2E_BACKEND=real      # the default Qwen model (minutes)
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set (use editors/scripts/run-vscode-e2e.sh)`);
  return value;
};
const CODE_SERVER = env('SPEC_LSP_CODE_SERVER');
const VSIX = env('SPEC_LSP_VSIX');
const PLAYWRIGHT = env('SPEC_LSP_PLAYWRIGHT'); // folder holding node_modules/playwright-core
const CHROMIUM = env('SPEC_LSP_CHROMIUM', '/usr/bin/chromium');
const SPEC_LSP = env('SPEC_LSP_EXE');
const BACKEND = env('SPEC_LSP_E2E_BACKEND', 'fake');
const OUT = env('SPEC_LSP_E2E_OUT');
const REAL = BACKEND === 'real';
const TIMEOUT_S = Number(env('SPEC_LSP_E2E_TIMEOUT', REAL ? '600' : '60'));
const RECORD = process.env.SPEC_LSP_E2E_RECORD; // a file: record the messages (sequences below)
const PYTHON = env('SPEC_LSP_PYTHON', path.join(path.dirname(SPEC_LSP), 'python'));
const RECORDER = path.join(path.dirname(new URL(import.meta.url).pathname), 'lsp_recorder.py');

const require = createRequire(import.meta.url);
const { chromium } = require(path.join(PLAYWRIGHT, 'node_modules', 'playwright-core'));

// What to type, and what the ghost text must start with (null: whatever the model writes).
const CASE = REAL
  ? {
      // An empty function body: the model suggests several lines (multi-line ghost text).
      before: 'def is_prime(n: int) -> bool:\n    """Return True if n is a prime number."""\n',
      typed: '    ',
      expect: null,
    }
  : { before: 'import os\n\n', typed: 'def fo', expect: 'o(x):' };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (...args) => console.log(`[vscode-e2e ${new Date().toISOString().slice(11, 19)}]`, ...args);
const clean = (text) => (text ?? '').replace(/\u00a0/g, ' ').replace(/\u200b/g, '');

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

async function waitFor(what, probe, timeoutMs, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

function setUp() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spec-lsp-vscode-'));
  const dirs = {
    root,
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    workspace: path.join(root, 'workspace'),
    xdg: path.join(root, 'xdg'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  const serverLog = path.join(root, 'server.log');
  const serverArgs = ['serve', '--log-file', serverLog, '--log-level', 'DEBUG'];
  if (!REAL) serverArgs.push('--backend', 'fake');
  const settings = {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'workbench.tips.enabled': false,
    'workbench.colorTheme': 'Default Dark Modern',
    'chat.disableAIFeatures': true,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'telemetry.telemetryLevel': 'off',
    'files.hotExit': 'off',
    'files.autoSave': 'off',
    'editor.fontSize': 15,
    'editor.minimap.enabled': false,
    'editor.inlineSuggest.enabled': true,
    // No suggest widget (word-based suggestions would take Tab); the ghost text is the subject.
    'editor.quickSuggestions': { other: false, comments: false, strings: false },
    'editor.suggestOnTriggerCharacters': false,
    // SPEC_LSP_E2E_RECORD: the messages go through tests/editors/lsp_recorder.py into that file
    'specLsp.serverCommand': RECORD ? PYTHON : SPEC_LSP,
    'specLsp.serverArgs': RECORD ? [RECORDER, RECORD, '--', SPEC_LSP, ...serverArgs] : serverArgs,
    'specLsp.statsIntervalMs': 1000,
  };
  fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  // code-server is a remote window: settings with scope machine(-overridable), such as
  // specLsp.serverCommand, are read from the remote ("Machine") settings, not the user's.
  fs.mkdirSync(path.join(dirs.userData, 'Machine'), { recursive: true });
  const machine = Object.fromEntries(Object.entries(settings).filter(([k]) => k.startsWith('specLsp.server')));
  fs.writeFileSync(path.join(dirs.userData, 'Machine', 'settings.json'), JSON.stringify(machine, null, 2));
  // A key for "Trigger Inline Suggestion" (triggerKind Invoked), used if the model was still
  // loading when we typed: editors only ask while typing.
  // accept-line has no default key: ours, for the recorded sequences
  const keybindings = [
    { key: 'ctrl+alt+g', command: 'editor.action.inlineSuggest.trigger', when: 'editorTextFocus' },
    { key: 'ctrl+alt+l', command: 'editor.action.inlineSuggest.acceptNextLine', when: 'inlineSuggestionVisible' },
  ];
  fs.writeFileSync(path.join(dirs.userData, 'User', 'keybindings.json'), JSON.stringify(keybindings));
  fs.writeFileSync(path.join(dirs.workspace, 'demo.py'), CASE.before);
  if (RECORD) {  // (before the workbench starts: Quick Open lists them)
    for (const [name] of SEQUENCES) fs.writeFileSync(path.join(dirs.workspace, `seq-${name}.py`), 'import os\n\n');
  }
  return { dirs, serverLog };
}

// The models the machine has pulled (the one thing shared with it: everything else spec-lsp
// keeps, cost profiles and probe verdicts, starts empty, as on a fresh machine)
const MODELS_DIR = process.env.SPEC_LSP_MODELS_DIR
  ?? path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'spec-lsp', 'models');

function codeServerEnv(dirs) {
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(dirs.xdg, 'config'),
    XDG_DATA_HOME: path.join(dirs.xdg, 'data'),
    XDG_CACHE_HOME: path.join(dirs.xdg, 'cache'),
    SPEC_LSP_MODELS_DIR: MODELS_DIR,
  };
  delete env.SPEC_LSP_PROFILE_DIR;
  delete env.SPEC_LSP_PROBE_DIR;
  return env;
}

async function startCodeServer(dirs) {
  const common = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];
  log('installing', path.basename(VSIX));
  execFileSync(CODE_SERVER, ['--install-extension', VSIX, '--force', ...common], {
    env: codeServerEnv(dirs),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = await freePort();
  const out = fs.openSync(path.join(dirs.root, 'code-server.log'), 'a');
  const child = spawn(
    CODE_SERVER,
    ['--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check',
      '--disable-workspace-trust', '--disable-getting-started-override', ...common, dirs.workspace],
    { env: codeServerEnv(dirs), detached: true, stdio: ['ignore', out, out] },
  );
  const url = `http://127.0.0.1:${port}/`;
  await waitFor('code-server', async () => {
    try {
      return (await fetch(`${url}healthz`)).ok;
    } catch {
      return false;
    }
  }, 60_000);
  log('code-server', url, 'pid', child.pid);
  return { child, url };
}

/**
 * In the page: remember when each key went down and when the current ghost text appeared in
 * the DOM (a MutationObserver; reset when it goes away), so that the time to ghost text is
 * measured from the keystroke that triggered the request, not from our polling.
 */
async function watchGhost(page) {
  await page.evaluate(() => {
    const w = window;
    w.__specE2E = { keys: [], ghostAt: null };
    if (w.__specE2EInstalled) return;
    w.__specE2EInstalled = true;
    document.addEventListener('keydown', () => w.__specE2E.keys.push(Date.now()), true);
    const shown = () => {
      const root = document.querySelector('.editor-group-container .monaco-editor');
      if (!root) return false;
      if ([...root.querySelectorAll('.ghost-text-decoration')].some((e) => e.textContent)) return true;
      return [...root.querySelectorAll('.view-zones .suggest-preview-text .view-line')]
        .some((e) => e.querySelector('.ghost-text') && e.textContent.trim());
    };
    new MutationObserver(() => {
      const now = shown();
      if (now && w.__specE2E.ghostAt === null) w.__specE2E.ghostAt = Date.now();
      else if (!now) w.__specE2E.ghostAt = null;
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

/** Seconds from the last keystroke before the ghost text appeared to its appearance. */
async function keyToGhost(page) {
  const { keys, ghostAt } = await page.evaluate(() => window.__specE2E);
  if (ghostAt === null) return null;
  const key = keys.filter((t) => t <= ghostAt).pop();
  return key === undefined ? null : { key_to_ghost_s: (ghostAt - key) / 1000, keys: keys.length };
}

/** The server's per-request timing lines (`--log-level DEBUG`) added since `from` bytes. */
function serverTimings(serverLog, from) {
  if (!fs.existsSync(serverLog)) return { lines: [], size: from };
  const text = fs.readFileSync(serverLog, 'utf8');
  const lines = text.slice(from).split('\n').filter((l) => /: queue \d+ ms, /.test(l));
  return { lines, size: text.length };
}

async function ghostText(page) {
  return page.evaluate(() => {
    const root = document.querySelector('.editor-group-container .monaco-editor');
    if (!root) return null;
    const inline = [...root.querySelectorAll('.ghost-text-decoration')].map((e) => e.textContent).join('');
    // Further lines live in a view zone below the cursor line, one .view-line each.
    const lines = [...root.querySelectorAll('.view-zones .suggest-preview-text .view-line')]
      .filter((e) => e.querySelector('.ghost-text'))
      .map((e) => e.textContent);
    return inline || lines.some((l) => l.trim()) ? { inline, lines } : null;
  });
}

/** The ghost text once it has not changed for 500 ms (at most 3 s after `first`). */
async function settledGhost(page, first) {
  let last = first;
  let since = Date.now();
  const end = Date.now() + 3_000;
  while (Date.now() < end && Date.now() - since < 500) {
    await sleep(100);
    const now = (await ghostText(page)) ?? last;
    if (JSON.stringify(now) !== JSON.stringify(last)) {
      last = now;
      since = Date.now();
    }
  }
  return last;
}

async function statusText(page) {
  return page.evaluate(() => {
    const item = [...document.querySelectorAll('.statusbar-item')].find((e) => (e.id || '').includes('specLsp.status'));
    return item ? { text: item.textContent.trim(), html: item.innerHTML } : null;
  });
}

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
}

/**
 * Do `act` at the end of demo.py, wait for ghost text, screenshot it, save, Tab, save again.
 * We always type at the end of the file, so the file after accepting must be exactly the file
 * before plus the ghost text (lines compared without trailing blanks: VS Code trims the
 * indentation it inserted itself when the cursor leaves the line).
 */
async function ghostStep(page, file, name, act, serverLog) {
  const step = { name };
  const statusBefore = (await statusText(page))?.text;
  const logFrom = serverTimings(serverLog, 0).size;
  await watchGhost(page);
  const t0 = Date.now();
  await act();
  let lastTrigger = Date.now();
  const ghost = await waitFor(`ghost text (${name})`, async () => {
    const g = await ghostText(page);
    if (g) return g;
    if (Date.now() - lastTrigger > (REAL ? 90_000 : 5_000)) {
      log('no ghost text yet: Trigger Inline Suggestion');
      await page.keyboard.press('Control+Alt+G');
      lastTrigger = Date.now();
    }
    return null;
  }, TIMEOUT_S * 1000, 250);
  step.ghost_s = (Date.now() - t0) / 1000;
  // VS Code draws a multi-line suggestion's further lines a moment after its first line: what
  // Tab accepts is the ghost text once it has stopped changing.
  const settled = await settledGhost(page, ghost);
  step.ghost = { inline: clean(settled.inline), lines: settled.lines.map(clean) };
  log(`ghost text (${name}):`, JSON.stringify(step.ghost), `(after ${step.ghost_s}s)`);
  const timing = await keyToGhost(page);
  step.key_to_ghost_s = timing?.key_to_ghost_s ?? null;
  log(`time to ghost text (${name}): ${step.key_to_ghost_s === null ? '?' : step.key_to_ghost_s.toFixed(2)}s`
    + ' from the last keystroke to the ghost text in the DOM');
  if (process.env.SPEC_LSP_E2E_DEBUG) {
    const html = await page.evaluate(() => document.querySelector('.editor-group-container .monaco-editor').outerHTML);
    fs.writeFileSync(path.join(OUT, `dom-${name}.html`), html);
  }
  // Let the status bar catch up with this completion's stats (polled every second), then shoot.
  await waitFor('fresh stats', async () => (await statusText(page))?.text !== statusBefore, 2500).catch(() => {});
  step.screenshot = path.join(OUT, `vscode-ghost-${BACKEND}-${name}.png`);
  await page.screenshot({ path: step.screenshot });

  const mtime = fs.statSync(file).mtimeMs;
  await page.keyboard.press('Control+S');
  await waitFor('demo.py saved', () => fs.statSync(file).mtimeMs !== mtime, 10_000);
  const before = fs.readFileSync(file, 'utf8');
  if (!(await ghostText(page))) throw new Error(`the ghost text (${name}) went away on save`);
  await page.keyboard.press('Tab');
  await sleep(500);
  await page.keyboard.press('Control+S');
  const norm = (text) => text.split('\n').map((l) => l.trimEnd()).join('\n').replace(/\n+$/, '');
  const want = norm(before + step.ghost.inline + step.ghost.lines.map((l) => `\n${l}`).join(''));
  try {
    step.saved = await waitFor(`the accepted text in demo.py (${name})`, () => {
      const text = fs.readFileSync(file, 'utf8');
      return norm(text) === want ? text : null;
    }, 15_000);
  } catch (error) {
    step.saved = fs.readFileSync(file, 'utf8');
    throw new Error(`${error.message}\nexpected ${JSON.stringify(want)}\ngot      ${JSON.stringify(norm(step.saved))}`);
  }
  log(`demo.py after Tab + save (${name}):`, JSON.stringify(step.saved));
  // The requests' timing lines (the server logs one when a generation ends, after the answer).
  step.server_timings = serverTimings(serverLog, logFrom).lines;
  for (const line of step.server_timings) log(`server (${name}):`, line);
  return step;
}

// What a person does with a suggestion, each in a file of its own (seq-<name>.py), so that
// tests/editors/sequences.py can cut the recording into one fixture per action: [name, what is
// typed first, the action]. Fake model: `def fo` -> `o(x):`, `def foo(x):` -> the body below.
const steps = (...keys) => async (page) => {  // keys pressed, pauses (ms) between
  for (const key of keys) {
    if (typeof key === 'number') await sleep(key);
    else await page.keyboard.press(key);
  }
};
const SEQUENCES = [
  ['accept', 'def fo', steps('Tab')],
  // (" foo(x):": VS Code's first word is the space; the second, "foo")
  ['accept-word', 'def', steps(700, 'Control+ArrowRight', 700, 'Control+ArrowRight')],
  ['accept-line', 'def foo(x):', steps('Enter', 1000, 'Control+Alt+L')],
  ['typing-along', 'def fo', (page) => page.keyboard.type('o(xZ', { delay: 400 })],
  ['batched-keys', 'def fo', (page) => page.keyboard.type('o(Z', { delay: 0 })],
  ['enter-autoindent', 'def foo(x):', steps('Enter', 600, 'r', 300, 'e', 300, 't', 300, 'Z')],
  ['cycling', 'def fo', steps('Alt+BracketRight', 600, 'Alt+BracketLeft', 600, 'Tab')],
  ['escape', 'def fo', steps('Escape', 600, 'Z')],
];

async function recordSequences(page, dirs) {
  const done = [];
  const only = process.env.SPEC_LSP_E2E_SEQUENCES?.split(',');  // (a few of them)
  for (const [name, typed, act] of SEQUENCES.filter(([name]) => !only || only.includes(name))) {
    const file = path.join(dirs.workspace, `seq-${name}.py`);
    await waitFor(`quick open (${name})`, async () => {
      await page.keyboard.press('Control+P');
      return page.locator('.quick-input-widget input').isVisible();
    }, 30_000, 1000);
    await page.keyboard.type(`seq-${name}.py`);
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: `seq-${name}.py` }).first();
    await row.waitFor({ timeout: 20_000 });
    await row.click(); // (Enter takes the row highlighted: a file opened recently may be it)
    await waitFor(`seq-${name}.py in the editor`, async () =>
      (await page.locator('.editor-group-container .tab.active').textContent())?.includes(`seq-${name}.py`), 20_000);
    await page.locator('.editor-group-container .monaco-editor .view-lines').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type(typed, { delay: 60 });
    await waitFor(`ghost text (${name})`, () => ghostText(page), 20_000, 100);
    await sleep(300);
    await act(page);
    await sleep(1500); // (the last change and request, before the next file)
    log(`recorded: ${name}`);
    done.push({ name, uri: `file://${file}` });
  }
  fs.writeFileSync(`${RECORD}.files.json`, JSON.stringify(done, null, 1));
  return done;
}

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  for (const old of fs.readdirSync(OUT)) {
    if (old.startsWith('vscode-') && old.includes(`-${BACKEND}`)) fs.rmSync(path.join(OUT, old));
  }
  const { dirs, serverLog } = setUp();
  const started = Date.now();
  const { child, url } = await startCodeServer(dirs);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const result = { backend: BACKEND, ok: false };
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 560 } });
    await page.goto(`${url}?folder=${encodeURIComponent(dirs.workspace)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
    log('workbench loaded');

    // Open demo.py with Quick Open.
    await waitFor('quick open', async () => {
      await page.keyboard.press('Control+P');
      return page.locator('.quick-input-widget input').isVisible();
    }, 30_000, 1000);
    await page.keyboard.type('demo.py');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'demo.py' }).first().waitFor({ timeout: 20_000 });
    await page.keyboard.press('Enter');
    await page.waitForSelector('.editor-group-container .monaco-editor .view-lines', { timeout: 30_000 });
    log('demo.py open');

    // The extension starts the server; the status bar shows stats once the model is loaded.
    const loadStart = Date.now();
    const ready = await waitFor('the status bar stats (server running, model loaded)', async () => {
      const s = await statusText(page);
      return s && s.text.includes('tok/s') ? s : null;
    }, TIMEOUT_S * 1000, 500);
    result.load_s = (Date.now() - loadStart) / 1000;
    log('status bar:', JSON.stringify(ready.text), `(after ${result.load_s}s)`);

    await page.locator('.editor-group-container .monaco-editor .view-lines').click();
    await page.keyboard.press('Control+End');
    const file = path.join(dirs.workspace, 'demo.py');
    // Step 1: type the start of a line; the rest appears as ghost text; Tab accepts it.
    result.steps = [];
    result.steps.push(await ghostStep(page, file, 'typed', async () => {
      await page.keyboard.type(CASE.typed, { delay: 60 });
    }, serverLog));
    const first = result.steps[0].ghost.inline;
    if (CASE.expect !== null && !first.startsWith(CASE.expect)) {
      throw new Error(`ghost text ${JSON.stringify(first)} does not start with ${JSON.stringify(CASE.expect)}`);
    }
    // Step 2: Enter; on the new (indented, empty) line the next lines are suggested.
    result.steps.push(await ghostStep(page, file, 'newline', async () => {
      await page.keyboard.press('Control+End');
      await page.keyboard.press('Enter');
    }, serverLog));
    result.screenshot = result.steps[0].screenshot;

    // Stats: the status bar (polled specLsp/stats) and the Show Stats command.
    // (the suggestions accepted beside tok/s: a rate once the Tab above was seen)
    const after = await waitFor('stats with the acceptance rate', async () => {
      const s = await statusText(page);
      return s && /\d+% · [\d.]+ tok\/s/.test(s.text) ? s : null;
    }, 15_000);
    result.status_bar = after.text;
    await runCommand(page, 'spec-lsp: Show Stats');
    const toast = await waitFor('the stats notification', async () => {
      const texts = await page.locator('.notifications-toasts .notification-list-item-message').allTextContents();
      return texts.find((t) => t.includes('suggestions accepted'));
    }, 15_000);
    result.stats_message = toast;
    log('Show Stats:', toast);

    // Toggle off: the status bar says so; toggle on again.
    await runCommand(page, 'spec-lsp: Toggle Completions');
    await waitFor('the status bar "off" icon', async () => (await statusText(page))?.html.includes('circle-slash'), 15_000);
    await runCommand(page, 'spec-lsp: Toggle Completions');
    await waitFor('the status bar back on', async () => !(await statusText(page))?.html.includes('circle-slash'), 15_000);
    log('toggle off/on: ok');
    if (RECORD && !REAL) result.sequences = await recordSequences(page, dirs);
    result.ok = true;
  } catch (error) {
    result.error = String(error?.stack ?? error);
    try {
      const pages = browser.contexts().flatMap((c) => c.pages());
      if (pages[0]) await pages[0].screenshot({ path: path.join(OUT, `vscode-failure-${BACKEND}.png`) });
    } catch {}
    for (const [name, file] of [['server.log', serverLog], ['code-server.log', path.join(dirs.root, 'code-server.log')]]) {
      if (fs.existsSync(file)) {
        const text = fs.readFileSync(file, 'utf8');
        console.log(`--- ${name} (tail) ---\n${text.slice(-3000)}`);
      }
    }
  } finally {
    result.total_s = (Date.now() - started) / 1000;
    await browser.close();
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    await sleep(500);
    if (!process.env.SPEC_LSP_E2E_KEEP) fs.rmSync(dirs.root, { recursive: true, force: true });
  }
  fs.writeFileSync(path.join(OUT, `vscode-result-${BACKEND}.json`), JSON.stringify(result, null, 2));
  log(result.ok ? 'PASSED' : 'FAILED', JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(2);
});
