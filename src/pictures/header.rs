//! What an upload's own bytes say of it before any pixel is decoded: its size, how it is coded,
//! and whether it is whole. Read by walking the format's structure (a JPEG's markers, a PNG's
//! chunks). That costs one pass over the bytes and allocates nothing but a bounded colour
//! profile. The decoders read some of this too, but only as they decode, when the memory is
//! spent. And the image library's JPEG decoder fills a cut-off file with grey instead of
//! failing (`zune-jpeg` with `strict_mode(false)`, as `image` builds it).

use std::borrow::Cow;

use super::error::PictureError;

/// What a JPEG's frame header (SOF) says, from a file that is whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct JpegFrame {
    pub width: u32,
    pub height: u32,
    /// 1 (grey), 3 (YCbCr) or 4 (CMYK).
    pub components: u8,
    /// Progressive JPEGs keep every coefficient of the picture until the last scan.
    pub progressive: bool,
    /// Its scans (a baseline JPEG has one, or one a component; a progressive one, several).
    pub scans: u32,
}

/// A JPEG's frame, once its markers have been walked from SOI to EOI. A file that ends before
/// its end marker (cut off in transit, or on purpose) is refused here, because the decoder
/// would show its missing part as flat grey. A scan cut short with an end marker put back after
/// it passes here (its markers are all there): `prepare` tells it by decoding.
pub(super) fn jpeg_frame(bytes: &[u8]) -> Result<JpegFrame, PictureError> {
    walk_jpeg(bytes, &mut |_| {})
}

/// Where the coded data of each of a whole JPEG's scans ends: at the marker after it (what
/// [`jpeg_frame`] walks).
pub(super) fn jpeg_scan_ends(bytes: &[u8]) -> Result<Vec<usize>, PictureError> {
    let mut ends = Vec::new();
    walk_jpeg(bytes, &mut |end| ends.push(end))?;
    Ok(ends)
}

/// Walks a JPEG's markers from SOI to EOI, telling `scan_end` where each scan's coded data ends.
fn walk_jpeg(bytes: &[u8], scan_end: &mut dyn FnMut(usize)) -> Result<JpegFrame, PictureError> {
    let damaged = |why: &str| PictureError::Unreadable(format!("the JPEG {why}"));
    let truncated = || damaged("ends before its end marker: it is cut off");
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return Err(damaged("does not start with its start marker"));
    }
    let (mut at, mut frame, mut scans) = (2_usize, None::<JpegFrame>, 0_u32);
    // The components the scans of a baseline (sequential) JPEG have coded so far.
    let mut coded = 0_u32;
    loop {
        // A marker: 0xFF, any number of fill bytes 0xFF, then its code. Stray bytes before it
        // are passed over, as libjpeg does (`next_marker`: "extraneous bytes before marker")
        // and browsers with it.
        at += memchr::memchr(0xFF, bytes.get(at..).ok_or_else(truncated)?).ok_or_else(truncated)?;
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let code = *bytes.get(at).ok_or_else(truncated)?;
        at += 1;
        match code {
            // EOI: whole, if a frame and a scan came before it.
            0xD9 => {
                return match frame {
                    Some(frame) if scans > 0 => Ok(JpegFrame { scans, ..frame }),
                    _ => Err(damaged("ends without a picture in it")),
                };
            }
            // Markers without a length: TEM and the restart markers.
            0x01 | 0xD0..=0xD7 => continue,
            0x00 | 0xD8 => return Err(damaged("has a marker where none may be")),
            _ => {}
        }
        let length = usize::from(u16::from_be_bytes([
            *bytes.get(at).ok_or_else(truncated)?,
            *bytes.get(at + 1).ok_or_else(truncated)?,
        ]));
        if length < 2 {
            return Err(damaged("has a segment shorter than its own length"));
        }
        let segment = bytes.get(at + 2..at + length).ok_or_else(truncated)?;
        at += length;
        match code {
            // SOF0–SOF15, but DHT (C4), JPG (C8) and DAC (CC), which share the range.
            0xC0..=0xCF if !matches!(code, 0xC4 | 0xC8 | 0xCC) => {
                if frame.is_some() {
                    return Err(damaged("has two frames"));
                }
                let [_precision, h1, h0, w1, w0, components, ..] = *segment else {
                    return Err(damaged("has a frame header too short to read"));
                };
                let (width, height) = (
                    u32::from(u16::from_be_bytes([w1, w0])),
                    u32::from(u16::from_be_bytes([h1, h0])),
                );
                if width == 0 || height == 0 || !matches!(components, 1 | 3 | 4) {
                    return Err(damaged(
                        "has a frame of no size, or of a colour model no browser shows",
                    ));
                }
                let progressive = matches!(code, 0xC2 | 0xC6 | 0xCA | 0xCE);
                frame = Some(JpegFrame { width, height, components, progressive, scans: 0 });
            }
            // SOS: the scan's coded data runs to the next marker that is not a stuffed 0xFF00 or
            // a restart marker.
            0xDA => {
                let Some(frame) = frame else { return Err(damaged("has a scan before its frame")) };
                // A sequential JPEG codes each component in one scan (ITU T.81, B.2.3): a scan
                // after they are all coded is one put after a scan cut short.
                coded += u32::from(segment.first().copied().unwrap_or(0));
                if !frame.progressive && coded > u32::from(frame.components) {
                    return Err(damaged(
                        "has more scans than its components: one is cut off and another put after it",
                    ));
                }
                scans += 1;
                at = end_of_scan(bytes, at).ok_or_else(truncated)?;
                scan_end(at);
            }
            _ => {}
        }
    }
}

/// Where the coded data of a scan starting at `at` ends: at the next real marker.
fn end_of_scan(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        at += memchr::memchr(0xFF, bytes.get(at..)?)?;
        match *bytes.get(at + 1)? {
            0x00 | 0xD0..=0xD7 | 0xFF => at += 1,
            _ => return Some(at),
        }
    }
}

/// What a PNG's header chunk (IHDR) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PngHeader {
    pub width: u32,
    pub height: u32,
    /// The bytes of one pixel once decoded: a palette becomes RGBA at most, and 16-bit samples
    /// stay 16-bit.
    pub decoded_bytes_per_pixel: u8,
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The PNG's header, from its first chunk (which the format says is IHDR).
pub(super) fn png_header(bytes: &[u8]) -> Result<PngHeader, PictureError> {
    let damaged = || PictureError::Unreadable("the PNG does not start with its header".into());
    let header = bytes.strip_prefix(PNG_SIGNATURE).ok_or_else(damaged)?;
    let [0, 0, 0, 13, b'I', b'H', b'D', b'R', w3, w2, w1, w0, h3, h2, h1, h0, depth, colour, ..] =
        *header
    else {
        return Err(damaged());
    };
    let (width, height) =
        (u32::from_be_bytes([w3, w2, w1, w0]), u32::from_be_bytes([h3, h2, h1, h0]));
    let channels: u8 = match colour {
        0 => 1,
        2 => 3,
        // A palette's colours become RGB, or RGBA where it has transparency.
        3 => 4,
        4 => 2,
        6 => 4,
        _ => {
            return Err(PictureError::Unreadable(format!(
                "the PNG has the unknown colour type {colour}"
            )));
        }
    };
    if width == 0 || height == 0 {
        return Err(PictureError::Unreadable("the PNG says it has no pixels".into()));
    }
    Ok(PngHeader {
        width,
        height,
        decoded_bytes_per_pixel: channels * if depth == 16 { 2 } else { 1 },
    })
}

/// A PNG made ready for the decoder. Its colour profile is inflated here within `max_profile`
/// bytes. Every chunk that inflates or that nobody reads is left out (iCCP, tEXt, zTXt, iTXt).
/// So the decoder never inflates a profile or a text into memory it was not given. The `png`
/// crate inflates an iCCP chunk up to its whole allocation limit before anyone can look at its
/// size (`StreamingDecoder::parse_iccp_raw`). That takes a 1 MB chunk to 1 GiB, for a profile
/// we keep only up to 64 KB. A profile that inflates past that is refused; one that does not
/// inflate at all is damage.
pub(super) struct PngParts<'a> {
    pub bytes: Cow<'a, [u8]>,
    pub colour_profile: Option<Vec<u8>>,
}

pub(super) fn png_parts(bytes: &[u8], max_profile: usize) -> Result<PngParts<'_>, PictureError> {
    let truncated =
        || PictureError::Unreadable("the PNG ends inside a chunk: it is cut off".into());
    let mut at = PNG_SIGNATURE.len();
    let mut kept: Option<Vec<u8>> = None;
    let mut colour_profile = None;
    while at < bytes.len() {
        let head = bytes.get(at..at + 8).ok_or_else(truncated)?;
        let length = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = [head[4], head[5], head[6], head[7]];
        // Length, type, data and CRC.
        let end = at
            .checked_add(12)
            .and_then(|end| end.checked_add(length))
            .filter(|end| *end <= bytes.len())
            .ok_or_else(truncated)?;
        let left_out = matches!(&kind, b"iCCP" | b"tEXt" | b"zTXt" | b"iTXt");
        if &kind == b"iCCP" && colour_profile.is_none() {
            colour_profile = Some(inflated_profile(&bytes[at + 8..end - 4], max_profile)?);
        }
        match (&mut kept, left_out) {
            // Until the first chunk left out, the bytes are used as they are.
            (None, false) => {}
            (None, true) => kept = Some(bytes[..at].to_vec()),
            (Some(kept), false) => kept.extend_from_slice(&bytes[at..end]),
            (Some(_), true) => {}
        }
        at = end;
        if &kind == b"IEND" {
            break;
        }
    }
    let bytes = match kept {
        Some(kept) => Cow::Owned(kept),
        None => Cow::Borrowed(&bytes[..at]),
    };
    Ok(PngParts { bytes, colour_profile })
}

/// An iCCP chunk's profile (a name of 1–79 bytes, a zero, the compression method 0, then the
/// zlib stream), inflated to at most `max` bytes.
fn inflated_profile(data: &[u8], max: usize) -> Result<Vec<u8>, PictureError> {
    let damaged = || PictureError::Unreadable("the PNG's colour profile is damaged".into());
    let name_end = data
        .iter()
        .take(80)
        .position(|byte| *byte == 0)
        .filter(|end| *end > 0)
        .ok_or_else(damaged)?;
    let (&method, compressed) =
        data.get(name_end + 1..).and_then(<[u8]>::split_first).ok_or_else(damaged)?;
    if method != 0 {
        return Err(damaged());
    }
    fdeflate::decompress_to_vec_bounded(compressed, max).map_err(|error| match error {
        fdeflate::BoundedDecompressionError::OutputTooLarge { .. } => {
            PictureError::ColourProfileTooLarge { max }
        }
        fdeflate::BoundedDecompressionError::DecompressionError { .. } => damaged(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JPEG of its markers only: SOI, a baseline frame, one scan whose coded data holds a
    /// stuffed 0xFF00 and a restart marker, then EOI.
    fn minimal_jpeg() -> Vec<u8> {
        let mut bytes = vec![0xFF, 0xD8];
        bytes.extend([0xFF, 0xC0, 0, 11, 8, 0, 20, 0, 40, 1, 1, 0x11, 0]);
        bytes.extend([0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0]);
        bytes.extend([0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56]);
        bytes.extend([0xFF, 0xD9]);
        bytes
    }

    #[test]
    fn a_whole_jpeg_says_its_frame() {
        let frame = jpeg_frame(&minimal_jpeg()).unwrap();
        assert_eq!(
            frame,
            JpegFrame { width: 40, height: 20, components: 1, progressive: false, scans: 1 }
        );
        assert_eq!(jpeg_scan_ends(&minimal_jpeg()).unwrap(), vec![minimal_jpeg().len() - 2]);
    }

    /// Cut anywhere before its end marker, a JPEG is refused as cut off or damaged.
    #[test]
    fn a_jpeg_cut_anywhere_is_refused() {
        let whole = minimal_jpeg();
        for cut in 0..whole.len() {
            assert!(jpeg_frame(&whole[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_png_header_says_what_its_pixels_take() {
        let mut png = PNG_SIGNATURE.to_vec();
        png.extend([0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 1, 0, 0, 0, 0, 2, 16, 6, 0, 0, 0]);
        assert_eq!(
            png_header(&png).unwrap(),
            PngHeader { width: 256, height: 2, decoded_bytes_per_pixel: 8 }
        );
    }
}
