//! Uploads made to hurt, as a hostile writer with an account would send them: each is small,
//! passes the checks of a picture's size, and once cost the handler far more memory or time
//! than its bytes (issue: "Nothing a signed-in writer sends can take the blog down"). Built
//! here byte by byte, so that the tests say exactly what each file is; the fuzzers' seed corpus
//! holds the same files (`fuzz/corpus/picture`).

use std::io::Write;

/// A GIF whose canvas is `side` × `side` pixels, with `frames` frames of one pixel each: about
/// 23 bytes a frame. The image library decodes each frame as a full RGBA canvas (144 MB at
/// 6,000 × 6,000), so 300 of them once asked for 43 GB.
pub(crate) fn gif_canvas_with_tiny_frames(side: u16, frames: usize) -> Vec<u8> {
    let mut gif = b"GIF89a".to_vec();
    gif.extend(side.to_le_bytes());
    gif.extend(side.to_le_bytes());
    // A global colour table of two colours, black and white.
    gif.extend([0x80, 0, 0]);
    gif.extend([0, 0, 0, 255, 255, 255]);
    for _ in 0..frames {
        // A graphic control extension: 10 ms a frame.
        gif.extend([0x21, 0xF9, 4, 0, 1, 0, 0, 0]);
        // An image descriptor at (0, 0), 1 × 1, no local colours; its pixel, LZW-coded with a
        // minimum code size of 2: the codes clear (4), 0, end (5) in 3 bits each.
        gif.extend([0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0]);
        gif.extend([2, 2, 0x44, 0x01, 0]);
    }
    gif.push(0x3B);
    gif
}

/// A 1 × 1 PNG whose colour profile (iCCP) is `mebibytes` MiB of zeros, compressed as tightly
/// as deflate allows (about 1,000 to 1): 1 GiB in about 1 MB.
pub(crate) fn png_with_inflating_profile(mebibytes: usize) -> Vec<u8> {
    let mut profile = b"bomb\0\0".to_vec();
    profile.extend(zlib_zeros(mebibytes));
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
    chunk(&mut png, b"iCCP", &profile);
    // One row: filter 0, then one RGB pixel.
    let mut pixels = Vec::new();
    let mut compressor = flate2::write::ZlibEncoder::new(&mut pixels, flate2::Compression::default());
    compressor.write_all(&[0, 200, 30, 30]).unwrap();
    compressor.finish().unwrap();
    chunk(&mut png, b"IDAT", &pixels);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// A zlib stream of `mebibytes` MiB of zeros, made without compressing them all: deflate's
/// blocks that follow a MiB of zeros code the next MiB the same way (matches one byte back), so
/// one such run, ended on a byte by a sync flush, is written again and again.
fn zlib_zeros(mebibytes: usize) -> Vec<u8> {
    let zeros = vec![0_u8; 1024 * 1024];
    let mut compress = flate2::Compress::new(flate2::Compression::best(), false);
    let mut run = |flush| {
        let mut out = Vec::with_capacity(64 * 1024);
        let before = compress.total_in();
        let input: &[u8] = if flush == flate2::FlushCompress::Finish { &[] } else { &zeros };
        compress.compress_vec(input, &mut out, flush).unwrap();
        assert_eq!((compress.total_in() - before) as usize, input.len(), "the output had room");
        out
    };
    let first = run(flate2::FlushCompress::Sync);
    let next = run(flate2::FlushCompress::Sync);
    let end = run(flate2::FlushCompress::Finish);
    let mut stream = vec![0x78, 0xDA];
    stream.extend(&first);
    for _ in 1..mebibytes {
        stream.extend(&next);
    }
    stream.extend(&end);
    // Adler-32 of n zeros: a stays 1, b adds it n times.
    let total = (mebibytes as u64) * 1024 * 1024;
    stream.extend((((total % 65_521) << 16) as u32 | 1).to_be_bytes());
    stream
}

fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    png.extend(u32::try_from(data.len()).unwrap().to_be_bytes());
    png.extend(kind);
    png.extend(data);
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    png.extend(crc.sum().to_be_bytes());
}

/// A `width` × `height` JPEG that looks like a photo to an encoder (smooth gradients with a
/// little grain), at quality 90: about 1 byte a pixel at most.
pub(crate) fn photo_jpeg(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let grain = (state % 8) as u8;
        let r = (x * 255 / width.max(1)) as u8;
        let g = (y * 255 / height.max(1)) as u8;
        let b = ((x + y) % 256) as u8;
        image::Rgb([r.saturating_add(grain), g.saturating_add(grain), b.saturating_add(grain)])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90).encode_image(&pixels).unwrap();
    jpeg
}
