-- Headless Neovim (0.7+) as groundcode's LSP client: open a file, change it with
-- nvim_buf_set_lines (Neovim's own incremental sync sends the didChange), ask for
-- textDocument/inlineCompletion at the end of the last edited line with buf_request_sync
-- (0.7-0.11 send any method; they do not advertise inline completion), apply the item with
-- vim.lsp.util.apply_text_edits, and write what happened as JSON to $GC_OUT.
-- Environment: GC_FILE (the file), GC_ROOT (the workspace folder), GC_CMD (the server command,
-- a JSON list), GC_LINES (JSON list of lines appended to the buffer), GC_OUT (result file).
local out_path = os.getenv("GC_OUT")

local function finish(result)
  local f = assert(io.open(out_path, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
end

local function run()
  local file, root = os.getenv("GC_FILE"), os.getenv("GC_ROOT")
  local cmd = vim.fn.json_decode(os.getenv("GC_CMD"))
  local added = vim.fn.json_decode(os.getenv("GC_LINES"))
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local ready = false
  local client_id = vim.lsp.start_client({
    name = "groundcode",
    cmd = cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "shop" } },
    flags = { debounce_text_changes = 0 },
    on_init = function() ready = true end,
  })
  assert(client_id, "start_client failed")
  vim.lsp.buf_attach_client(bufnr, client_id)
  assert(vim.wait(120000, function() return ready end, 20), "the server did not initialize")
  local client = vim.lsp.get_client_by_id(client_id)
  local caps = client.server_capabilities or client.resolved_capabilities or {}

  -- the edit: only the buffer gets the new lines (the file on disk stays as it was)
  local n = vim.api.nvim_buf_line_count(bufnr)
  vim.api.nvim_buf_set_lines(bufnr, n, n, false, added)
  local row = n + #added - 1                       -- 0-based: the last added line
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  local enc = client.offset_encoding or "utf-16"
  local col_utf32, col_utf16 = vim.str_utfindex(line)
  local character = (enc == "utf-8") and #line or (enc == "utf-32" and col_utf32 or col_utf16)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = row, character = character },
    context = { triggerKind = 1 },
  }
  local responses, err = vim.lsp.buf_request_sync(bufnr, "textDocument/inlineCompletion", params, 120000)
  assert(responses, "no response: " .. tostring(err))
  local resp = responses[client_id]
  assert(resp and not resp.err, "error: " .. vim.inspect(resp and resp.err))
  local items = resp.result and (resp.result.items or resp.result) or {}
  local item = items[1]
  local applied = nil
  if item then
    local range = item.range or { start = params.position, ["end"] = params.position }
    vim.lsp.util.apply_text_edits({ { range = range, newText = item.insertText } }, bufnr, enc)
    applied = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  end
  finish({
    nvim = vim.version(), encoding = enc, line = line, character = character,
    item = item or vim.NIL, applied = applied or vim.NIL,
    inline_declared = caps.inlineCompletionProvider ~= nil or caps.inline_completion_provider ~= nil,
    modified = vim.api.nvim_buf_get_option(bufnr, "modified"),
  })
  vim.lsp.stop_client(client_id)
  vim.wait(10000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
end

local ok, msg = pcall(run)
if not ok then
  finish({ error = tostring(msg) })
end
vim.cmd("qall!")
