-- spec-lsp for Neovim: starts `spec-lsp serve`, passes settings, maps keys, shows stats.
-- Neovim >= 0.12 renders the server's textDocument/inlineCompletion natively
-- (vim.lsp.inline_completion); 0.10 and 0.11 use the small shim in spec_lsp/shim.lua.
local M = {}

M.defaults = {
  name = 'spec_lsp',
  cmd = { 'spec-lsp', 'serve' },
  -- nil: every buffer with a filetype; or a list such as { 'python', 'lua' }.
  filetypes = nil,
  root_markers = { '.git', 'pyproject.toml', 'package.json', 'Cargo.toml', 'go.mod' },
  -- Server settings (camelCase, see `spec-lsp schema`), sent as initializationOptions.
  settings = {},
  keymaps = {
    accept = '<Tab>', -- falls back to a plain <Tab> when nothing is shown
    next = '<M-]>',
    prev = '<M-[>',
    dismiss = '<C-]>', -- shim only (0.12 dismisses on <Esc> / typing)
  },
  -- nil: native inline completion on >= 0.12, shim before; false forces the shim.
  native = nil,
  debounce_ms = 150, -- shim only (0.12 debounces by itself)
  hl_group = 'SpecLspGhost', -- shim only (0.12 uses ComplHint)
}

M.config = nil

local function native_supported()
  return vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil
end

--- The running spec-lsp client for `bufnr` (or any buffer), or nil.
function M.client(bufnr)
  local name = (M.config or M.defaults).name
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local clients = get({ name = name, bufnr = bufnr })
  if #clients == 0 and bufnr then
    clients = get({ name = name })
  end
  return clients[1]
end

local function client_call(client, method, ...)
  -- 0.11 made client methods take self (client:request); 0.10 used client.request(...).
  if vim.fn.has('nvim-0.11') == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end
M._client_call = client_call

--- Ask the server for `specLsp/stats`; `callback(err, stats)`.
function M.stats(callback)
  local client = M.client(vim.api.nvim_get_current_buf())
  if not client then
    callback('spec-lsp is not running', nil)
    return
  end
  client_call(client, 'request', 'specLsp/stats', vim.empty_dict(), function(err, result)
    if not err then
      M.last_stats = result
    end
    callback(err and (err.message or vim.inspect(err)) or nil, result)
  end)
end

--- The share of decided suggestions the person accepted (whole or in part), or '-'.
function M.kept_rate(s)
  local a = s.acceptance or {}
  if a.rate == nil or a.rate == vim.NIL then
    return '-'
  end
  return string.format('%d%%', math.floor(a.rate * 100 + 0.5))
end

--- For a statusline: the suggestions accepted beside tokens/s (from the last stats asked).
function M.status()
  local s = M.last_stats
  if not s then
    return ''
  end
  return string.format('spec-lsp %s · %.1f tok/s', M.kept_rate(s), s.tokens_per_second or 0)
end

--- The confidence gate: its threshold, or why it is off (no weights fitted for the model).
local function gate_text(g)
  if type(g) ~= 'table' then
    return '-'
  end
  if g.on then
    return string.format('on (threshold %s)', g.threshold)
  end
  return 'off' .. ((type(g.why) == 'string') and (' (' .. g.why .. ')') or '')
end

function M.format_stats(s)
  local p50 = s.latency_ms_p50 == vim.NIL and '-' or tostring(s.latency_ms_p50 or '-')
  local a = s.acceptance or {}
  return string.format(
    'spec-lsp: suggestions accepted %s (%d/%d shown), drafts accepted %d%% (%d/%d), %.1f tok/s, %d completions, p50 %s ms, models: %s, confidence gate: %s',
    M.kept_rate(s),
    (a.accepted or 0) + (a.partial or 0),
    a.shown or 0,
    math.floor((s.acceptance_rate or 0) * 100 + 0.5),
    s.accepted or 0,
    s.drafted or 0,
    s.tokens_per_second or 0,
    s.requests or 0,
    p50,
    table.concat(s.models or {}, ', '),
    gate_text(s.gate)
  )
end

--- Change server settings at run time (workspace/didChangeConfiguration, section specLsp).
function M.set(settings)
  M.config.settings = vim.tbl_extend('force', M.config.settings, settings)
  local client = M.client()
  if client then
    client_call(client, 'notify', 'workspace/didChangeConfiguration', { settings = { specLsp = settings } })
  end
end

function M.toggle()
  local enabled = M.config.settings.enable ~= false
  M.set({ enable = not enabled })
  vim.notify('spec-lsp completions ' .. (enabled and 'off' or 'on'))
end

local function create_commands()
  vim.api.nvim_create_user_command('SpecLspStats', function(args)
    M.stats(function(err, stats)
      if err then
        vim.notify('spec-lsp: ' .. err, vim.log.levels.ERROR)
      elseif args.bang then
        vim.notify(vim.inspect(stats))
      else
        vim.notify(M.format_stats(stats))
      end
    end)
  end, { bang = true, desc = 'spec-lsp: show acceptance and tokens/s (! for everything)' })
  vim.api.nvim_create_user_command('SpecLspToggle', M.toggle, { desc = 'spec-lsp: completions on/off' })
  vim.api.nvim_create_user_command('SpecLspRestart', function()
    local client = M.client()
    if client then
      client_call(client, 'stop')
    end
    vim.defer_fn(function()
      vim.cmd('edit') -- re-attach: FileType fires again
    end, 500)
  end, { desc = 'spec-lsp: restart the server' })
end

local function map_native(keys)
  local ic = vim.lsp.inline_completion
  if keys.accept then
    vim.keymap.set('i', keys.accept, function()
      if not ic.get() then
        return keys.accept
      end
    end, { expr = true, replace_keycodes = true, desc = 'spec-lsp: accept the suggestion' })
  end
  if keys.next then
    vim.keymap.set('i', keys.next, function()
      ic.select({ count = 1 })
    end, { desc = 'spec-lsp: next suggestion' })
  end
  if keys.prev then
    vim.keymap.set('i', keys.prev, function()
      ic.select({ count = -1 })
    end, { desc = 'spec-lsp: previous suggestion' })
  end
end

local function start_client(config)
  local lsp_config = {
    cmd = config.cmd,
    filetypes = config.filetypes,
    root_markers = config.root_markers,
    init_options = config.settings,
  }
  if vim.lsp.config and vim.lsp.enable then -- 0.11+
    vim.lsp.config(config.name, lsp_config)
    vim.lsp.enable(config.name)
    return
  end
  -- 0.10: start (or reuse) the client when a matching buffer gets its filetype.
  vim.api.nvim_create_autocmd('FileType', {
    group = vim.api.nvim_create_augroup('spec_lsp_start', { clear = true }),
    pattern = config.filetypes or '*',
    callback = function(args)
      if vim.bo[args.buf].buftype ~= '' then
        return
      end
      vim.lsp.start({
        name = config.name,
        cmd = config.cmd,
        root_dir = vim.fs.root(args.buf, config.root_markers) or vim.fn.getcwd(),
        init_options = config.settings,
      }, { bufnr = args.buf })
    end,
  })
end

function M.setup(opts)
  local config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  if opts and opts.keymaps == false then
    config.keymaps = {}
  end
  M.config = config
  local native = config.native
  if native == nil then
    native = native_supported()
  end
  config.native = native and native_supported()

  start_client(config)
  create_commands()
  local group = vim.api.nvim_create_augroup('spec_lsp', { clear = true })
  -- a buffer entered: the server evaluates its context while you read (specLsp/didFocus);
  -- and a buffer opened (BufEnter came before the client attached): once its didOpen is sent.
  -- With the cursor, also where it stopped in normal mode (CursorHold): the server evaluates
  -- the prompt there, so the ask after the first key finds it begun.
  local function tell_focus(args)
    local get = vim.lsp.get_clients or vim.lsp.get_active_clients
    local client = get({ name = config.name, bufnr = args.buf })[1] -- (attached to it)
    if client and args.buf == vim.api.nvim_get_current_buf() then
      local win = vim.api.nvim_get_current_win()
      local at = vim.lsp.util.make_position_params(win, client.offset_encoding or 'utf-16')
      client_call(client, 'notify', 'specLsp/didFocus', {
        textDocument = { uri = vim.uri_from_bufnr(args.buf) },
        position = at.position,
      })
    end
  end
  vim.api.nvim_create_autocmd(
    { 'BufEnter', 'LspAttach', 'CursorHold' },
    { group = group, callback = tell_focus }
  )
  if config.native then
    vim.lsp.inline_completion.enable(true)
    map_native(config.keymaps)
  else
    local shim = require('spec_lsp.shim')
    shim.setup(config)
    vim.api.nvim_create_autocmd('LspAttach', {
      group = group,
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data.client_id)
        if client and client.name == config.name then
          shim.attach(args.buf, client)
        end
      end,
    })
  end
  return M
end

return M
