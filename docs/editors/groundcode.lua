-- groundcode.lua: grounded inline completion from `groundcode lsp` in Neovim 0.7-0.11, over
-- vim.lsp.buf_request (these versions have no inline-completion UI; Neovim 0.12+ does: see
-- docs/EDITORS.md). Tested on Debian 12's Neovim 0.7.2 by tests/test_lsp_nvim.py.
--
--   local gc = dofile("/path/to/groundcode.lua")     -- or copy it to lua/groundcode.lua: require
--   gc.setup({ cmd = { "groundcode", "lsp" } })      -- <M-]> asks, <M-l> accepts
--
-- It attaches to Python, TypeScript and JavaScript buffers (filetypes python, typescript,
-- javascript, typescriptreact, javascriptreact: the languages groundcode grounds); `filetypes`
-- picks others, e.g. gc.setup({ filetypes = { "python" } }).
--
-- The suggestion shows as virtual text at the cursor (Neovim 0.10+: inline; 0.7-0.9: at the end
-- of the line). Typing on makes it stale (it is dropped); a new request cancels the previous one
-- ($/cancelRequest), and the server cancels its generation.
local M = { ns = vim.api.nvim_create_namespace("groundcode"), shown = {}, client_id = nil }

M.filetypes = { "python", "typescript", "javascript", "typescriptreact", "javascriptreact" }

-- Start the server once (the first source buffer's root) and attach `bufnr` to it.
function M.attach(bufnr, opts)
  opts = opts or {}
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not (M.client_id and vim.lsp.get_client_by_id(M.client_id)) then
    local root = opts.root_dir or vim.fn.getcwd()
    M.client_id = vim.lsp.start_client({
      name = "groundcode",
      cmd = opts.cmd or { "groundcode", "lsp" },
      root_dir = root,
      workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
      flags = { debounce_text_changes = 0 },   -- the server debounces and cancels itself
      init_options = opts.init_options,        -- { trust = true }: only for a project you trust
    })
  end
  vim.lsp.buf_attach_client(bufnr, M.client_id)
  return M.client_id
end

function M.clear(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  M.shown[bufnr] = nil
end

-- Ask for a completion at (row 0-based, col in bytes); default: the cursor (in insert mode).
function M.request(bufnr, row, col)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.client_id and vim.lsp.get_client_by_id(M.client_id)
  if not client then return end
  if row == nil then
    local cur = vim.api.nvim_win_get_cursor(0)
    row, col = cur[1] - 1, cur[2]
  end
  M.clear(bufnr)
  if M.cancel then M.cancel() end
  local enc = client.offset_encoding or "utf-16"
  local position = { line = row, character = vim.lsp.util.character_offset(bufnr, row, col, enc) }
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = position,
                   context = { triggerKind = 1 } }
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local _, cancel = vim.lsp.buf_request(bufnr, "textDocument/inlineCompletion", params,
    function(err, result, ctx)
      if err then                                -- say it once per message, never silently
        local msg = type(err) == "table" and err.message or tostring(err)
        if M.last_error ~= msg then
          M.last_error = msg
          vim.notify(msg, vim.log.levels.WARN)
        end
        return
      end
      if not result or (ctx and ctx.client_id ~= M.client_id) then return end
      if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then return end   -- typed on: stale
      local item = (result.items or result)[1]
      if not item or item.insertText == "" then return end
      local lines = vim.split(item.insertText, "\n", { plain = true })
      local more = {}
      for k = 2, #lines do more[#more + 1] = { { lines[k], "Comment" } } end
      vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, col, {
        virt_text = { { lines[1], "Comment" } },
        virt_text_pos = vim.fn.has("nvim-0.10") == 1 and "inline" or "eol",
        virt_lines = #more > 0 and more or nil,
      })
      M.shown[bufnr] = { item = item, enc = enc, row = row, col = col, position = position }
      if M.on_show then M.on_show(bufnr, item) end
    end)
  M.cancel = cancel
end

-- Insert the suggestion shown in `bufnr`; false when there is none.
function M.accept(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local s = M.shown[bufnr]
  if not s then return false end
  M.clear(bufnr)
  local range = s.item.range or { start = s.position, ["end"] = s.position }
  vim.lsp.util.apply_text_edits({ { range = range, newText = s.item.insertText } }, bufnr, s.enc)
  local lines = vim.split(s.item.insertText, "\n", { plain = true })
  local col = (#lines == 1 and s.col or 0) + #lines[#lines]
  if vim.api.nvim_get_current_buf() == bufnr then
    pcall(vim.api.nvim_win_set_cursor, 0, { s.row + #lines, col })
  end
  return true
end

function M.setup(opts)
  opts = opts or {}
  local group = vim.api.nvim_create_augroup("groundcode", { clear = true })
  vim.api.nvim_create_autocmd("FileType", { group = group, pattern = opts.filetypes or M.filetypes,
    callback = function(ev) M.attach(ev.buf, opts) end })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, { group = group,
    callback = function(ev) M.clear(ev.buf) end })
  if opts.auto then      -- ask after every change in insert mode (the server debounces)
    vim.api.nvim_create_autocmd("TextChangedI", { group = group,
      callback = function(ev) if M.client_id then M.request(ev.buf) end end })
  end
  vim.keymap.set("i", opts.request_key or "<M-]>", function() M.request() end,
                 { desc = "groundcode: suggest" })
  vim.keymap.set("i", opts.accept_key or "<M-l>", function() M.accept() end,
                 { desc = "groundcode: accept the suggestion" })
end

return M
