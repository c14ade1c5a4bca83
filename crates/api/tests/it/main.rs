//! Integration tests of the API: the real router on 127.0.0.1, a real PostgreSQL database per
//! test, and a real HTTP client.

mod artifacts;
mod browser;
mod calls;
mod config;
mod connections;
mod email;
mod feedback;
mod folder_proposals;
mod folders;
mod health;
mod matrix;
mod memory;
mod notifications;
mod openapi;
mod pagination;
mod people;
mod runs;
mod schedules;
mod sessions;
mod settings;
mod site;
mod stream;
mod subscriptions;
mod support;
mod web;
mod web_session;
mod web_types;
