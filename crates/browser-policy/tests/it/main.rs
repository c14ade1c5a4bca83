//! The launch policy against the installed automation driver (`chromiumoxide`): the command
//! line it builds is recorded by a stand-in executable, with its own defaults and with the
//! policy applied as the browser role applies it.

mod launch;
