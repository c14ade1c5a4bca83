//! The hosted browser role (`steward-browser.service`, with `AGENT_BROWSER_ENABLED=1`). It owns
//! the browsers: one headed Chromium per task, each behind its own egress proxy ([`proxy`],
//! reaching out through the egress relay [`relay`] under systemd), launched with the launch policy ([`chromium`], [`display`]);
//! serves their control plane on loopback ([`control`], [`tasks`], [`page`]); and runs the
//! sign-in ceremonies ([`ceremony`], [`handoff`], [`signin`]) whose website sessions it keeps
//! sealed per profile ([`storage`]) and puts into a task's browser ([`session`]). Its listeners
//! arrive from systemd ([`activation`]).

pub mod activation;
pub mod ceremony;
pub mod chromium;
pub mod control;
pub mod display;
pub mod handoff;
pub mod outside;
pub mod page;
pub mod proxy;
pub mod relay;
pub mod session;
pub mod signin;
pub mod storage;
pub mod tasks;
