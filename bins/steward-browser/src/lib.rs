//! The hosted browser role, in progress. Built so far: the egress proxy ([`proxy`]) every
//! connection of a hosted browser goes through. Not yet: the browsers themselves (headed
//! Chromium under Xvfb, launched with `browser_policy::launch`), profiles and their sign-in
//! ceremonies, and `browser.act`; until they exist the role refuses to start.

pub mod ceremony;
pub mod chromium;
pub mod control;
pub mod display;
pub mod handoff;
pub mod page;
pub mod proxy;
pub mod session;
pub mod storage;
pub mod tasks;
