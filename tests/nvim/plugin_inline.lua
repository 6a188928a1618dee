-- Headless Neovim runs the documented config (docs/editors/groundcode.lua, $GC_PLUGIN) as a
-- user would: attach (with $GC_BY_FILETYPE=1: by the plugin's own FileType autocommand), edit the buffer with nvim_buf_set_lines, ask at the end of the last
-- edited line, wait for the ghost text (an extmark), accept it, and write the result to $GC_OUT.
local out_path = os.getenv("GC_OUT")

local function finish(result)
  local f = assert(io.open(out_path, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
end

local function run()
  local gc = dofile(os.getenv("GC_PLUGIN"))
  local file, root = os.getenv("GC_FILE"), os.getenv("GC_ROOT")
  local added = vim.fn.json_decode(os.getenv("GC_LINES"))
  local id
  if os.getenv("GC_BY_FILETYPE") == "1" then
    -- the user's way: filetype detection on, setup() with its default filetypes, then open the
    -- file; the plugin's FileType autocommand attaches the buffer (no attach() call here)
    vim.cmd("filetype on")
    gc.setup({ cmd = vim.fn.json_decode(os.getenv("GC_CMD")), root_dir = root })
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    assert(vim.wait(5000, function() return gc.client_id ~= nil end, 20),
           "the plugin did not attach to a '" .. vim.bo.filetype .. "' buffer")
    id = gc.client_id
  else
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    gc.setup({ cmd = vim.fn.json_decode(os.getenv("GC_CMD")), root_dir = root })
    id = gc.attach(vim.api.nvim_get_current_buf(), { cmd = vim.fn.json_decode(os.getenv("GC_CMD")), root_dir = root })
  end
  local bufnr = vim.api.nvim_get_current_buf()
  assert(vim.wait(120000, function()
    local c = vim.lsp.get_client_by_id(id)
    return c ~= nil and c.initialized
  end, 20), "the server did not initialize")
  local n = vim.api.nvim_buf_line_count(bufnr)
  vim.api.nvim_buf_set_lines(bufnr, n, n, false, added)
  local row = n + #added - 1
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  gc.request(bufnr, row, #line)
  assert(vim.wait(120000, function() return gc.shown[bufnr] ~= nil end, 20), "no suggestion shown")
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, gc.ns, 0, -1, { details = true })
  local ghost = marks[1] and marks[1][4].virt_text[1][1]
  local item = gc.shown[bufnr].item
  local accepted = gc.accept(bufnr)
  finish({
    ghost = ghost or vim.NIL, accepted = accepted, line = line, item = item,
    applied = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1],
    marks_after = #vim.api.nvim_buf_get_extmarks(bufnr, gc.ns, 0, -1, {}),
  })
  vim.lsp.stop_client(id)
  vim.wait(10000, function() return vim.lsp.get_client_by_id(id) == nil end, 50)
end

local ok, msg = pcall(run)
if not ok then
  finish({ error = tostring(msg) })
end
vim.cmd("qall!")
