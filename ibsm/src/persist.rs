//! Atomic file replacement for everything the SM persists (guid2lid) or dumps.
//!
//! A file is replaced in two steps so that a crash at any moment leaves either the old or the
//! new content, never a torn file: [`stage`] writes the new content to a temporary file in the
//! same directory and fsyncs it; [`Staged::commit`] renames it over the target and fsyncs the
//! directory. Dropping a [`Staged`] without committing (the "crash between write and rename"
//! case) removes the temporary file and leaves the target untouched.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A persistence failure, naming the file and the operation.
#[derive(Debug, thiserror::Error)]
#[error("{op} {path}: {source}")]
pub struct PersistError {
    /// What was being done ("create", "write", "fsync", "rename").
    pub op: &'static str,
    /// The file concerned.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: io::Error,
}

/// OpenSM's `exit_on_fatal` for a guid2lid file read at start: the file's first line that
/// is not three numbers (which makes the SM discard the whole file), as OpenSM's FATAL
/// "Error restoring Guid-to-Lid persistent database" naming `path` and the line. `None` when
/// every line reads (entries the SM drops one by one — duplicates, illegal ranges — are
/// warnings, as in OpenSM's `lid_mgr_validate_db`).
#[must_use]
pub fn guid2lid_fatal(path: &Path, text: &str) -> Option<String> {
    let (_, warnings) = sm::lid::Guid2Lid::parse(text);
    let (line, raw) = warnings.iter().find_map(|w| match &w.problem {
        sm::lid::Guid2LidProblem::Syntax(raw) => Some((w.line, raw)),
        _ => None,
    })?;
    Some(format!(
        "FATAL: Error restoring Guid-to-Lid persistent database {}: line {line}: \
         {raw:?} is not `GUID BASE_LID LAST_LID` (exit_on_fatal; -y/--stay_on_fatal goes on \
         and assigns LIDs afresh)",
        path.display()
    ))
}

fn err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> PersistError + 'a {
    move |source| PersistError {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// New content written and synced next to its target, not yet visible under the target name.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    target: PathBuf,
    committed: bool,
}

/// Writes `data` to a temporary file beside `target` and fsyncs it.
///
/// # Errors
/// Any failure to create, write or sync the temporary file.
pub fn stage(target: &Path, data: &[u8]) -> Result<Staged, PersistError> {
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = target.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(err("create", &tmp))?;
    let staged = Staged {
        tmp,
        target: target.to_path_buf(),
        committed: false,
    };
    f.write_all(data).map_err(err("write", &staged.tmp))?;
    f.sync_all().map_err(err("fsync", &staged.tmp))?;
    Ok(staged)
}

impl Staged {
    /// Renames the temporary file over the target and fsyncs the directory.
    ///
    /// # Errors
    /// A failed rename (the target keeps its old content) or directory sync.
    pub fn commit(mut self) -> Result<(), PersistError> {
        fs::rename(&self.tmp, &self.target).map_err(err("rename", &self.target))?;
        self.committed = true;
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A directory fsync makes the rename durable; not every file system supports it.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// [`stage`] then [`Staged::commit`].
///
/// # Errors
/// As those two.
pub fn write_atomic(target: &Path, data: &[u8]) -> Result<(), PersistError> {
    stage(target, data)?.commit()
}

/// Writes OpenSM's dump files for the SM's current subnet into `dir` (created if missing),
/// each replaced atomically: `opensm-subnet.lst`, `ibnetdiscover.topo` and, once routed,
/// `opensm-lfts.dump`; with `qos` on or SL-to-VL tables from the routing engine,
/// `opensm-sl2vl.dump` (the tables as the ports acknowledged them); when the engine assigned
/// path SLs, `ibsm-path-sl.dump` (docs/dumps.md). Nodes `names` maps print under their
/// mapped names (`node_name_map_name`). Shared by `ibsm sim` and `ibsm run`.
///
/// # Errors
/// The directory or a file could not be written.
pub fn write_dump_files(
    dir: &Path,
    sm: &sm::Sm,
    names: &sm::names::NodeNames,
) -> Result<(), PersistError> {
    fs::create_dir_all(dir).map_err(err("create directory", dir))?;
    let subnet = sm.subnet();
    write_atomic(
        &dir.join("opensm-subnet.lst"),
        sm::dump::subnet_lst_named(subnet, names).as_bytes(),
    )?;
    write_atomic(
        &dir.join("ibnetdiscover.topo"),
        sm::dump::ibnetdiscover_named(subnet, None, names).as_bytes(),
    )?;
    if let Some(l) = sm.lfts() {
        write_atomic(
            &dir.join("opensm-lfts.dump"),
            sm::dump::lfts_dump_named(subnet, l, names).as_bytes(),
        )?;
    }
    let routes = sm.routes();
    if sm.config().qos.enabled || routes.is_some_and(|r| r.sl2vl.is_some()) {
        let known = |n, i, o| sm.known_qos(n).and_then(|k| k.sl2vl(i, o));
        write_atomic(
            &dir.join("opensm-sl2vl.dump"),
            sm::dump::sl2vl_dump_named(subnet, &known, names).as_bytes(),
        )?;
    }
    if let Some(sls) = routes.and_then(|r| r.path_sl.as_ref()) {
        // Quadratic in the end ports: streamed to a temporary file, then renamed.
        let target = dir.join("ibsm-path-sl.dump");
        let tmp = dir.join(".ibsm-path-sl.dump.tmp");
        let f = File::create(&tmp).map_err(err("create", &tmp))?;
        let mut w = io::BufWriter::new(f);
        sm::dump::write_path_sl_dump(subnet, sls, &mut w).map_err(err("write", &tmp))?;
        w.flush().map_err(err("write", &tmp))?;
        fs::rename(&tmp, &target).map_err(err("rename", &target))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-persist-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn write_replaces_content() {
        let d = tmpdir("replace");
        let f = d.join("guid2lid");
        write_atomic(&f, b"old\n").unwrap();
        write_atomic(&f, b"new\n").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"new\n");
        assert_eq!(
            fs::read_dir(&d).unwrap().count(),
            1,
            "no temporary file left behind"
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn crash_between_write_and_rename_leaves_old_file_intact() {
        let d = tmpdir("crash");
        let f = d.join("guid2lid");
        write_atomic(&f, b"0x0002c90000000001 0x0001 0x0001\n").unwrap();
        let staged = stage(&f, b"0x0002c90000000001 0x0009 0x0009\n").unwrap();
        // The new content is on disk under the temporary name only.
        assert_eq!(fs::read(&f).unwrap(), b"0x0002c90000000001 0x0001 0x0001\n");
        assert!(staged.tmp.exists());
        drop(staged); // the process "dies" before rename
        assert_eq!(fs::read(&f).unwrap(), b"0x0002c90000000001 0x0001 0x0001\n");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unwritable_target_names_the_file() {
        let e = write_atomic(Path::new("/nonexistent-dir/x/guid2lid"), b"x").unwrap_err();
        assert_eq!(e.op, "create");
        assert!(e.to_string().contains("/nonexistent-dir/x/"));
    }
}
