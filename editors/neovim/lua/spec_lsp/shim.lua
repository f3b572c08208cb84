-- Inline completion for Neovim 0.10 and 0.11, which have no vim.lsp.inline_completion:
-- request textDocument/inlineCompletion while typing (debounced), draw the first item as
-- extmarks (first line inline, the rest as virtual lines), accept / cycle / dismiss with keys.
local M = {}

local ns = vim.api.nvim_create_namespace('spec_lsp_inline')
M.ns = ns

local config
local timer
local state = nil -- what is shown: { buf, row, col, items, index, tick }
local pending = nil -- { client, id }

local function call(client, method, ...)
  return require('spec_lsp')._client_call(client, method, ...)
end

local function text_of(item)
  local text = item.insertText
  if type(text) == 'table' then -- StringValue (snippet): shown and inserted as its raw value
    text = text.value
  end
  return text or ''
end

-- Byte column of an LSP character offset on `line`.
local function byte_col(line, character, encoding)
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, col
  if vim.fn.has('nvim-0.11') == 1 then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding == 'utf-16')
  end
  return ok and col or #line
end

function M.clear(buf)
  if state then
    pcall(vim.api.nvim_buf_clear_namespace, state.buf, ns, 0, -1)
  end
  if buf then
    pcall(vim.api.nvim_buf_clear_namespace, buf, ns, 0, -1)
  end
  state = nil
end

--- The item's edit in bytes: start/end on the cursor line, the lines to insert, and the part
--- not typed yet (what the ghost text shows).
local function edit_of(item, buf, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  local text = text_of(item)
  local start_col, end_col = col, col
  if item.range and item.range.start.line == row and item.range['end'].line == row then
    start_col = byte_col(line, item.range.start.character, encoding)
    end_col = byte_col(line, item.range['end'].character, encoding)
  end
  local typed = line:sub(start_col + 1, col)
  local ghost = text
  if start_col < col then
    if text:sub(1, #typed) ~= typed then
      return nil -- the item does not extend what was typed
    end
    ghost = text:sub(#typed + 1)
  end
  return { start_col = start_col, end_col = math.max(end_col, col), text = text, ghost = ghost }
end

local function render()
  if not state then
    return
  end
  local item = state.items[state.index]
  local edit = edit_of(item, state.buf, state.row, state.col, state.encoding)
  vim.api.nvim_buf_clear_namespace(state.buf, ns, 0, -1)
  if not edit or edit.ghost == '' then
    state.edit = nil
    return
  end
  state.edit = edit
  local lines = vim.split(edit.ghost, '\n', { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { lines[i], config.hl_group } }
  end
  vim.api.nvim_buf_set_extmark(state.buf, ns, state.row, state.col, {
    virt_text = { { lines[1], config.hl_group } },
    virt_text_pos = 'inline',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = 'combine',
  })
end

local function cancel_pending()
  if pending then
    pcall(call, pending.client, 'cancel_request', pending.id)
    pending = nil
  end
end

function M.request(buf, client)
  cancel_pending()
  if vim.api.nvim_get_current_buf() ~= buf or not vim.api.nvim_get_mode().mode:match('^i') then
    return
  end
  local win = vim.api.nvim_get_current_win()
  local cursor = vim.api.nvim_win_get_cursor(win)
  local encoding = client.offset_encoding or 'utf-16'
  local params = vim.lsp.util.make_position_params(win, encoding)
  params.context = { triggerKind = 2 } -- Automatic
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  local ok, id = call(client, 'request', 'textDocument/inlineCompletion', params, function(err, result)
    pending = nil
    if err or not result then
      return
    end
    local items = result.items or result
    local now = vim.api.nvim_win_get_cursor(0)
    if #items == 0 or vim.api.nvim_get_current_buf() ~= buf
      or vim.api.nvim_buf_get_changedtick(buf) ~= tick
      or now[1] ~= cursor[1] or now[2] ~= cursor[2]
      or not vim.api.nvim_get_mode().mode:match('^i') then
      return -- stale: the user moved on
    end
    state = { buf = buf, row = cursor[1] - 1, col = cursor[2], items = items, index = 1,
              tick = tick, encoding = encoding }
    render()
  end, buf)
  if ok then
    pending = { client = client, id = id }
  end
end

function M.schedule_request(buf, client)
  M.clear(buf)
  timer:stop()
  timer:start(config.debounce_ms, 0, vim.schedule_wrap(function()
    M.request(buf, client)
  end))
end

--- Insert the shown suggestion. Returns false when nothing is shown (the key then falls back).
function M.accept()
  if not state or not state.edit then
    return false
  end
  local s, edit = state, state.edit
  M.clear()
  vim.schedule(function() -- expr mappings may not change the buffer themselves
    local lines = vim.split(edit.text, '\n', { plain = true })
    vim.api.nvim_buf_set_text(s.buf, s.row, edit.start_col, s.row, edit.end_col, lines)
    local last_row = s.row + #lines - 1
    local last_col = (#lines == 1 and edit.start_col or 0) + #lines[#lines]
    vim.api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  end)
  return true
end

function M.cycle(count)
  if state and #state.items > 1 then
    state.index = (state.index - 1 + count) % #state.items + 1
    render()
  end
end

--- What is shown now (for tests and statuslines): { text, lines } or nil.
function M.shown()
  if not state or not state.edit then
    return nil
  end
  return { text = state.edit.ghost, insert = state.edit.text }
end

function M.attach(buf, client)
  local group = vim.api.nvim_create_augroup('spec_lsp_shim_' .. buf, { clear = true })
  vim.api.nvim_create_autocmd({ 'TextChangedI', 'InsertEnter' }, {
    group = group,
    buffer = buf,
    callback = function()
      M.schedule_request(buf, client)
    end,
  })
  vim.api.nvim_create_autocmd('CursorMovedI', {
    group = group,
    buffer = buf,
    callback = function()
      local cursor = vim.api.nvim_win_get_cursor(0)
      if state and (state.row ~= cursor[1] - 1 or state.col ~= cursor[2]) then
        M.schedule_request(buf, client)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = buf,
    callback = function()
      timer:stop()
      cancel_pending()
      M.clear(buf)
    end,
  })
end

local function map(keys)
  local function fallback(key, fn)
    return function()
      if fn() then
        return ''
      end
      return key
    end
  end
  if keys.accept then
    vim.keymap.set('i', keys.accept, fallback(keys.accept, M.accept),
      { expr = true, replace_keycodes = true, desc = 'spec-lsp: accept the suggestion' })
  end
  if keys.next then
    vim.keymap.set('i', keys.next, function() M.cycle(1) end, { desc = 'spec-lsp: next suggestion' })
  end
  if keys.prev then
    vim.keymap.set('i', keys.prev, function() M.cycle(-1) end, { desc = 'spec-lsp: previous suggestion' })
  end
  if keys.dismiss then
    vim.keymap.set('i', keys.dismiss, fallback(keys.dismiss, function()
      local shown = state ~= nil
      M.clear()
      return shown
    end), { expr = true, replace_keycodes = true, desc = 'spec-lsp: dismiss the suggestion' })
  end
end

function M.setup(cfg)
  config = cfg
  timer = timer or (vim.uv or vim.loop).new_timer()
  vim.api.nvim_set_hl(0, config.hl_group, { link = 'Comment', default = true })
  map(config.keymaps)
end

return M
