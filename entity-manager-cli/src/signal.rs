//! Ctrl-C and SIGTERM during a resumable job (`purge`, `migrate`, `import`): the first stops the
//! job after the page in flight (its checkpoint saved, a line saying how to resume, exit 130);
//! a second one ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::{Failure, runtime};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static LISTENING: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C or SIGTERM arrived.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// From now on, Ctrl-C and SIGTERM set [`interrupted`] instead of ending the process (the
/// listener runs on the command's runtime, while the job's pages run on it).
pub(crate) fn listen() -> Result<(), Failure> {
    if LISTENING.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let rt = runtime()?;
    // registered now, so that a signal arriving before the first page is not lost
    #[cfg(unix)]
    let mut terminate = rt
        .block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        })
        .map_err(|e| Failure::Operation(format!("cannot listen for SIGTERM: {e}")))?;
    rt.spawn(async move {
        loop {
            #[cfg(unix)]
            let received = tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok(),
                r = terminate.recv() => r.is_some(),
            };
            #[cfg(not(unix))]
            let received = tokio::signal::ctrl_c().await.is_ok();
            if !received {
                return;
            }
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                say!("interrupted again: stopping now (the last saved checkpoint stands)");
                std::process::exit(130);
            }
            say!(
                "interrupted: stopping after the page in flight (interrupt again to stop at once)"
            );
        }
    });
    Ok(())
}
