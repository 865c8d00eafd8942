//! Races with the disk, made deterministic: a hook runs before each step of a read that opens
//! something below the root, and the tests swap what is there at a chosen step. Whatever the
//! step, what is served is the file inside the root, and nothing waits for a writer.
#![cfg(unix)]

use std::{
    io::Write as _,
    os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use super::{Directory, codes, file, open, uri};
use crate::context::Context;

const SECRET: &str = "TOP SECRET: outside the root";

/// `base/root/a/x.txt` ("inside") and `base/outside/a/x.txt` (the secret); removed when
/// dropped.
struct Tree {
    base: PathBuf,
    root: PathBuf,
}

impl Tree {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir().join(format!(
            "carmy-races-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(base.join("outside/a")).unwrap();
        std::fs::write(root.join("a/x.txt"), "inside").unwrap();
        std::fs::write(base.join("outside/a/x.txt"), SECRET).unwrap();
        Self { base, root }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Reads `relative` as the provider does once the URI is checked: its text, or its error's
/// code.
fn read(directory: &Directory, relative: &str) -> Result<String, String> {
    let settings = &directory.settings;
    let uri = uri::uri_of(&format!("{}/{relative}", settings.root_text));
    let segments = uri::locate(&settings.root_text, &uri, settings.hidden).unwrap();
    let contents =
        file::read(settings, &uri, &segments, &Context::new()).map_err(|e| e.code().to_owned())?;
    let content = contents.iter().next().unwrap();
    match content.body() {
        crate::resource::Body::Text(text) => Ok(text.clone()),
        other => Ok(format!("{other:?}")),
    }
}

/// Runs `work` on this thread with `swap` done at the `step`-th step of it (not at all if it
/// has fewer).
fn swapped_at<T>(step: usize, swap: impl FnOnce() + 'static, work: impl FnOnce() -> T) -> T {
    let mut swap = Some(swap);
    let mut seen = 0;
    open::hook::set(Some(Box::new(move || {
        seen += 1;
        if seen == step
            && let Some(swap) = swap.take()
        {
            swap();
        }
    })));
    let result = work();
    open::hook::set(None);
    result
}

#[test]
fn a_directory_swapped_for_a_link_outside_is_never_followed() {
    for step in 1..=4 {
        let tree = Tree::new();
        let directory = Directory::new(&tree.root).unwrap();
        let swap = {
            let (root, base) = (tree.root.clone(), tree.base.clone());
            move || {
                std::fs::rename(root.join("a"), base.join("moved")).unwrap();
                std::os::unix::fs::symlink(base.join("outside/a"), root.join("a")).unwrap();
            }
        };
        let read = swapped_at(step, swap, || read(&directory, "a/x.txt"));
        match &read {
            Ok(text) => assert_eq!(text, "inside", "swapped at step {step}"),
            Err(code) => assert_eq!(code, codes::OUTSIDE_ROOT, "swapped at step {step}"),
        }
        if step == 1 {
            // Swapped before anything below the root was opened: the link is met, and refused.
            assert_eq!(read, Err(codes::OUTSIDE_ROOT.to_owned()));
        }
    }
}

/// Opens `fifo` for writing, without waiting, once it is a FIFO that someone reads.
fn writer_of(fifo: &Path) -> Option<std::fs::File> {
    let is_fifo = std::fs::symlink_metadata(fifo).is_ok_and(|m| m.file_type().is_fifo());
    if !is_fifo {
        return None;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(fifo)
        .ok()
}

#[test]
fn a_file_swapped_for_a_fifo_is_refused_without_waiting_for_a_writer() {
    for step in 1..=4 {
        let tree = Tree::new();
        let directory = Directory::new(&tree.root).unwrap();
        let fifo = tree.root.join("a/x.txt");
        let swap = {
            let fifo = fifo.clone();
            move || {
                std::fs::remove_file(&fifo).unwrap();
                let made = std::process::Command::new("mkfifo").arg(&fifo).status();
                assert!(made.is_ok_and(|status| status.success()), "mkfifo");
            }
        };
        let done = Arc::new(AtomicBool::new(false));
        let reader = std::thread::spawn({
            let done = Arc::clone(&done);
            move || {
                let read = swapped_at(step, swap, || read(&directory, "a/x.txt"));
                done.store(true, Ordering::SeqCst);
                read
            }
        });
        // A reader stranded in `open` is freed by a writer: it then reads what was written.
        while !done.load(Ordering::SeqCst) {
            if let Some(mut writer) = writer_of(&fifo) {
                let _ = writer.write_all(b"stranded");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        match reader.join().unwrap() {
            Ok(text) => assert_eq!(text, "inside", "swapped at step {step}"),
            Err(code) => assert_eq!(code, "RESOURCE_NOT_FOUND", "swapped at step {step}"),
        }
    }
}
