//! A connection whose writes must make progress.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Wraps a connection so that a write (or flush) that stays pending for `limit` fails with
/// [`io::ErrorKind::TimedOut`]: the peer stopped reading and its buffers are full. Reads are
/// untouched (the header-read timeout bounds those).
#[derive(Debug)]
pub struct StallGuard<T> {
    inner: T,
    limit: Duration,
    /// The connection's one timer, made at its first stall and reset at each later one.
    deadline: Option<Pin<Box<Sleep>>>,
    /// A write is pending and the timer runs: when it fires, the write fails.
    armed: bool,
}

impl<T> StallGuard<T> {
    pub fn new(inner: T, limit: Duration) -> StallGuard<T> {
        StallGuard {
            inner,
            limit,
            deadline: None,
            armed: false,
        }
    }

    /// What a pending write means: still waiting, or stalled too long.
    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let at = Instant::now() + self.limit;
        let deadline = match (&mut self.deadline, self.armed) {
            (Some(deadline), true) => deadline,
            (Some(deadline), false) => {
                deadline.as_mut().reset(at);
                deadline
            }
            (None, _) => self.deadline.insert(Box::pin(tokio::time::sleep_until(at))),
        };
        self.armed = true;
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.armed = false;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the peer stopped reading: no write progress",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<R>(&mut self, outcome: Poll<io::Result<R>>, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        match outcome {
            Poll::Pending => self.pending(cx),
            ready => {
                self.armed = false;
                ready
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallGuard<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallGuard<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progress(outcome, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progress(outcome, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let outcome = Pin::new(&mut self.inner).poll_flush(cx);
        self.progress(outcome, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let outcome = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.progress(outcome, cx)
    }
}
