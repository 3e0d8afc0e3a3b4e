//! Uploads made to hurt, as a hostile writer with an account would send them: each is small,
//! passes the checks of a picture's size, and once cost the handler far more memory or time
//! than its bytes. The files themselves are the fuzzers' seeds (`fuzz/corpus/picture`, made by
//! `fuzz/seeds.py`, which says byte by byte what each is), so the tests and the fuzzers start
//! from the same ones.

/// A seed of the picture fuzz target, by its name.
pub(crate) fn seed(name: &str) -> Vec<u8> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/picture").join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A GIF whose canvas is 6,000 × 6,000 pixels, with 300 frames of one pixel each (7 KB). The
/// image library decodes each frame as a full RGBA canvas (144 MB), so its 300 frames once
/// asked for 43 GB.
pub(crate) fn gif_canvas_with_tiny_frames() -> Vec<u8> {
    seed("hostile-canvas-6000x6000-300-frames.gif")
}

/// A 1 × 1 PNG whose colour profile (iCCP) is 1 GiB of zeros, compressed as tightly as deflate
/// allows (1 MB).
pub(crate) fn png_with_inflating_profile() -> Vec<u8> {
    seed("hostile-iccp-1gib.png")
}

/// A `width` × `height` JPEG that looks like a photo to an encoder (smooth gradients with a
/// little grain), at quality 90: about 1 byte a pixel at most.
pub(crate) fn photo_jpeg(width: u32, height: u32, seed: u32) -> Vec<u8> {
    photo_jpeg_with_grain(width, height, seed, 8)
}

/// [`photo_jpeg`] with `grain` of noise: 20 is the benches' photo (`benches/pictures.rs`'s
/// `photo_jpeg`, the same pixels).
pub(crate) fn photo_jpeg_with_grain(width: u32, height: u32, seed: u32, grain: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let grain = (state % grain) as u8;
        let r = (x * 255 / width.max(1)) as u8;
        let g = (y * 255 / height.max(1)) as u8;
        let b = ((x + y) % 256) as u8;
        image::Rgb([r.saturating_add(grain), g.saturating_add(grain), b.saturating_add(grain)])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode_image(&pixels)
        .unwrap();
    jpeg
}

/// An APP1 EXIF segment: Orientation 6 (the camera was turned: rotate 90° clockwise to show)
/// and a GPS latitude of 48° 51' 29.58".
pub(crate) fn exif_segment() -> Vec<u8> {
    let mut tiff = b"II*\0".to_vec();
    tiff.extend(8_u32.to_le_bytes());
    // IFD0 at 8: two entries, then the next IFD's offset (none).
    tiff.extend(2_u16.to_le_bytes());
    tiff.extend([0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0]); // Orientation, SHORT, 1, 6
    tiff.extend([0x25, 0x88, 4, 0, 1, 0, 0, 0]); // GPSInfo, LONG, 1, at:
    tiff.extend(38_u32.to_le_bytes());
    tiff.extend(0_u32.to_le_bytes());
    // The GPS IFD at 38: one entry, GPSLatitude, RATIONAL, 3, at 56.
    tiff.extend(1_u16.to_le_bytes());
    tiff.extend([0x02, 0x00, 5, 0, 3, 0, 0, 0]);
    tiff.extend(56_u32.to_le_bytes());
    tiff.extend(0_u32.to_le_bytes());
    for (numerator, denominator) in [(48_u32, 1_u32), (51, 1), (2958, 100)] {
        tiff.extend(numerator.to_le_bytes());
        tiff.extend(denominator.to_le_bytes());
    }
    let mut payload = b"Exif\0\0".to_vec();
    payload.extend(tiff);
    let mut segment = vec![0xFF, 0xE1];
    segment.extend(u16::try_from(payload.len() + 2).unwrap().to_be_bytes());
    segment.extend(payload);
    segment
}

/// `jpeg` with `segment` right after its start-of-image marker, where a camera writes EXIF.
pub(crate) fn with_segment(jpeg: &[u8], segment: &[u8]) -> Vec<u8> {
    let mut bytes = jpeg[..2].to_vec();
    bytes.extend(segment);
    bytes.extend(&jpeg[2..]);
    bytes
}
