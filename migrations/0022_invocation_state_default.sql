-- A call is queued when it is recorded. The api login, which records the one call of a frozen
-- draft (Review & Send), names no state: policies/grants.sql grants it the other columns only,
-- so it cannot record a call already approved. Only an approval moves a call to `approved`, and
-- the worker dispatches an approved call only when an approval of exactly it exists.
ALTER TABLE tool_invocations ALTER COLUMN state SET DEFAULT 'queued';
