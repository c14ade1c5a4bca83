-- The owner's model settings, and the chat model snapshot each run was submitted with (new
-- settings apply to new chats and to the next message).

CREATE TABLE model_settings (
    principal_id            text        PRIMARY KEY,
    chat_model              text        NOT NULL,
    chat_reasoning_effort   text        NOT NULL,
    memory_model            text        NOT NULL,
    memory_reasoning_effort text        NOT NULL,
    updated_at              timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE runs
    ADD COLUMN chat_model            text,
    ADD COLUMN chat_reasoning_effort text;
