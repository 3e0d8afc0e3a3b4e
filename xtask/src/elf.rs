//! What a Linux executable asks of the machine it runs on, read from its ELF file: the machine
//! it is built for, and the newest glibc symbol version it needs. `objdump -T` tells the same,
//! but is not on macOS or Windows; this reads the two tables it would (the ELF specification,
//! and the GNU symbol versioning of the Linux Standard Base, "Symbol Versioning").

use std::fmt;

/// `e_machine` of x86_64 (EM_X86_64).
pub(crate) const X86_64: u16 = 62;

/// Section type of the version needs (`.gnu.version_r`, SHT_GNU_verneed).
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;

/// A glibc version, as `GLIBC_2.28` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GlibcVersion(pub u32, pub u32, pub u32);

impl GlibcVersion {
    /// `GLIBC_2.17` or `GLIBC_2.2.5`; `None` for other names (`GLIBC_PRIVATE`, `GCC_3.0`).
    fn from_symbol_version(name: &str) -> Option<GlibcVersion> {
        let mut parts =
            name.strip_prefix("GLIBC_")?.split('.').map(|part| part.parse::<u32>().ok());
        let major = parts.next()??;
        let minor = parts.next().unwrap_or(Some(0))?;
        let patch = parts.next().unwrap_or(Some(0))?;
        Some(GlibcVersion(major, minor, patch))
    }
}

impl fmt::Display for GlibcVersion {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            GlibcVersion(major, minor, 0) => write!(f, "{major}.{minor}"),
            GlibcVersion(major, minor, patch) => write!(f, "{major}.{minor}.{patch}"),
        }
    }
}

/// What the executable needs of the machine.
#[derive(Debug, PartialEq)]
pub(crate) struct Needs {
    pub machine: u16,
    /// The newest glibc version any of its symbols needs; `None` when it needs no glibc.
    pub newest_glibc: Option<GlibcVersion>,
}

/// Reads a 64-bit little-endian ELF file (what x86_64 and arm64 Linux run).
pub(crate) fn needs(file: &[u8]) -> Result<Needs, String> {
    if file.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file (is it built for Linux?)".into());
    }
    if file.get(4) != Some(&2) || file.get(5) != Some(&1) {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let reader = Reader(file);
    let machine = reader.u16(0x12)?;
    let section_table = reader.u64(0x28)? as usize;
    let section_size = reader.u16(0x3a)? as usize;
    let section_count = reader.u16(0x3c)? as usize;
    let sections: Vec<Section> = (0..section_count)
        .map(|index| Section::read(&reader, section_table + index * section_size))
        .collect::<Result<_, _>>()?;
    let mut newest_glibc = None;
    for needed in sections.iter().filter(|section| section.kind == SHT_GNU_VERNEED) {
        let strings =
            sections.get(needed.link as usize).ok_or("a version table names no string table")?;
        for name in version_names(&reader, needed, strings)? {
            newest_glibc = newest_glibc.max(GlibcVersion::from_symbol_version(&name));
        }
    }
    Ok(Needs { machine, newest_glibc })
}

/// The names of every version a `.gnu.version_r` table needs: entries (`Elf64_Verneed`, one
/// per library) each with a chain of `Elf64_Vernaux` (one per version of that library).
fn version_names(
    reader: &Reader,
    needed: &Section,
    strings: &Section,
) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut entry = needed.offset;
    for _ in 0..needed.info {
        let count = reader.u16(entry + 2)?;
        let mut aux = entry + reader.u32(entry + 8)? as usize;
        for _ in 0..count {
            names.push(reader.string(strings.offset + reader.u32(aux + 8)? as usize)?);
            aux += reader.u32(aux + 12)? as usize;
        }
        let next = reader.u32(entry + 12)? as usize;
        if next == 0 {
            break;
        }
        entry += next;
    }
    Ok(names)
}

/// The fields of an `Elf64_Shdr` this needs.
struct Section {
    kind: u32,
    offset: usize,
    link: u32,
    info: u32,
}

impl Section {
    fn read(reader: &Reader, at: usize) -> Result<Section, String> {
        Ok(Section {
            kind: reader.u32(at + 4)?,
            offset: reader.u64(at + 24)? as usize,
            link: reader.u32(at + 40)?,
            info: reader.u32(at + 44)?,
        })
    }
}

/// Little-endian reads that fail, instead of panicking, on a truncated file.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Result<[u8; N], String> {
        self.0
            .get(at..at.checked_add(N).ok_or("offset overflows")?)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| format!("the ELF file ends before offset {at:#x}"))
    }
    fn u16(&self, at: usize) -> Result<u16, String> {
        self.bytes(at).map(u16::from_le_bytes)
    }
    fn u32(&self, at: usize) -> Result<u32, String> {
        self.bytes(at).map(u32::from_le_bytes)
    }
    fn u64(&self, at: usize) -> Result<u64, String> {
        self.bytes(at).map(u64::from_le_bytes)
    }
    fn string(&self, at: usize) -> Result<String, String> {
        let rest =
            self.0.get(at..).ok_or_else(|| format!("the ELF file ends before offset {at:#x}"))?;
        let end = rest.iter().position(|byte| *byte == 0).ok_or("a string without its end")?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_versions_are_read_from_their_symbol_version_names() {
        assert_eq!(GlibcVersion::from_symbol_version("GLIBC_2.28"), Some(GlibcVersion(2, 28, 0)));
        assert_eq!(GlibcVersion::from_symbol_version("GLIBC_2.2.5"), Some(GlibcVersion(2, 2, 5)));
        assert_eq!(GlibcVersion::from_symbol_version("GLIBC_PRIVATE"), None);
        assert_eq!(GlibcVersion::from_symbol_version("GCC_3.0"), None);
        assert!(GlibcVersion(2, 34, 0) > GlibcVersion(2, 28, 0));
        assert!(GlibcVersion(2, 3, 0) < GlibcVersion(2, 28, 0), "numeric, not by text");
        assert_eq!(GlibcVersion(2, 2, 5).to_string(), "2.2.5");
    }

    /// The running test binary is an ELF file built on this machine against its glibc: its
    /// newest needed version is at least 2.2.5 and at most the glibc it runs on.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn this_test_binary_needs_a_glibc_no_newer_than_the_one_it_runs_on() {
        let file = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let needs = needs(&file).unwrap();
        let newest = needs.newest_glibc.expect("a glibc build needs glibc");
        assert!(newest >= GlibcVersion(2, 2, 5), "{newest}");
        let running = std::process::Command::new("ldd").arg("--version").output().unwrap();
        let first_line =
            String::from_utf8_lossy(&running.stdout).lines().next().unwrap_or_default().to_owned();
        let version = first_line.rsplit(' ').next().unwrap();
        let running = GlibcVersion::from_symbol_version(&format!("GLIBC_{version}")).unwrap();
        assert!(newest <= running, "needs {newest}, runs on {running}");
    }

    #[test]
    fn what_is_not_a_64_bit_elf_file_is_refused_with_a_reason() {
        assert!(needs(b"MZ\x90\x00").unwrap_err().contains("not an ELF file"));
        assert!(needs(b"\x7fELF\x01\x01").unwrap_err().contains("64-bit"));
        assert!(needs(b"\x7fELF\x02\x01\x01\x00").unwrap_err().contains("ends before"));
    }
}
