-- Each tool invocation records its tool's risk (issue 40: a client's tool-activity bundle shows
-- the highest risk among its calls), as the worker's roster gave it when the model proposed the
-- call. NULL for invocations recorded before, for a tool the roster does not hold, and for the
-- `send_message` call Review & Send records (always behind an approval card, which carries it).
ALTER TABLE tool_invocations ADD COLUMN risk text CHECK (risk IN ('low', 'medium', 'high'));
