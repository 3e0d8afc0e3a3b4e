#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus, fuzz/corpus/<target>/, from this file alone (Python's
standard library; nothing to install). Run it again after changing it: the files it writes are
committed, and tests/fuzz_regressions.rs runs each one through its target on stable.

    fuzz/seeds.py

Pictures: small valid JPEG (baseline, progressive, grey, with EXIF orientation, with a colour
profile), PNG (RGBA, palette with transparency, 16-bit grey, with a colour profile), GIF (still,
animated) and WebP (lossy, lossless with alpha); a JPEG cut to half its bytes and to its first
700; and three hostile files, each small, each saying it needs far more memory than its size:
a GIF with a 6000 x 6000 canvas and 300 frames of one pixel (about 7 KB; decoded as RGBA
canvases it is 300 x 144 MB), and a PNG whose colour profile (iCCP) inflates to 1 GiB of zeros
(about 1 MB). The JPEG and WebP bytes below were written once by the image crate (JPEG
baseline, WebP lossless), jpeg-encoder (progressive) and libwebp (lossy) from noise: Python's
standard library cannot encode either format.

Forms, Markdown and import files: what a browser, a writer and `handler export` send.
"""

import base64
import hashlib
import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

PHOTO_JPG = base64.b64decode(
    "/9j/4AAQSkZJRgABAgAAAQABAAD/wAARCAAwAEADAREAAhEBAxEB/9sAQwAFAwQEBAMFBAQEBQUFBgcMCAcHBwcPCwsJDBEP"
    "EhIRDxERExYcFxMUGhURERghGBodHR8fHxMXIiQiHiQcHh8e/9sAQwEFBQUHBgcOCAgOHhQRFB4eHh4eHh4eHh4eHh4eHh4e"
    "Hh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4e/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAA"
    "AgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6"
    "Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXG"
    "x8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREA"
    "AgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5"
    "OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPE"
    "xcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwD59tLR1laJRyVKZA69xgnGe2Pr2GBX6jOt"
    "pcxw+Js7GpbWQhO/ZKBzhMjofX0HGOnQ9cjjmnWvoe3h8Ry6mjDZSsQJl82EsdisAeQSMFjx/wDqrmlWXQ9qhiH12LdtYREk"
    "COZmBDByDuz/AHs/j1HYZ7VzzrM9jD4hGj9jcXO4RhXXABPDgY7Z69x36dq5nW0PapYnW5ftrR2n8pNi8EFc/ePXPPT1z6/p"
    "zTrWVz2sPiW3ZGdrOlyu4ktpY4pslgyIG5XaB+7CksP9WCP4dqnGRXThcUlpNXW3be/W6S6273a6ni59SqTaqYWahU+K9uZ3"
    "jyq/IqcpTTfIpa+5yU5pXjZ8lq9pPcXEa3cckcXmgyld7eY4G0ttOB/AwAAHQr9PboThCN4NN2020W9rq/dXevfqflubZnis"
    "VUUcVGUYKS55e++aXwOXLNxin7klGKULJOH2dNe104L5hO1DIeCfvgjJ4zwCf6fjXDOufHYeuav9n79ilYwQW6Dq2DjH5d/f"
    "HpXK69j3KVe9i1b2qMhk8ry2kO7OznoT15//AFc471zyqnr0MStzQtrJ4fMKxRkE/fTJbvzj1AycVzzrX6ntYfEOJesrUyOg"
    "nCtySjdsdST36ZI7/mc8061tj2cNib25i/b6csbBFZcR9G+YnGfUDA5zz1/pzyr3PZoV7dRmt2TLA7h5PMEbKhhARiRjcN56"
    "bm24Uck84IJq8NWvJLTfrqvu8le7eiXZ2OTPMTy0ZSvK/K7cnuyvbb2nTnnyKMYrmlJK6lDmS43VtK+x38FrdW0M1vEGYW8J"
    "UPgKNxbaMkkKDk4yORt6D26GKVWnKcJNSfV3tvpa/ra3R993+X5vGeAxtLC4mnGdKmm/ZwcVLSK5nNxTldqKk5tJyjqlB3jD"
    "WSyVEjdWLgIeV4Axz03Y6Y4HPU1ySrXPgKOISs7ly3sVaeMMrDrjcwDtk9CM9cg/TqMVzyraM9nD4hNr+mX4LQKfKlRWdhvJ"
    "z8hwOe3+fbgVzSrdUezQxPRl+0tcqGgiQv8AMBuOc5J9c/X0/PFc86vc9nD4nsaUNm2Gk3hc7VTYcBTnlfyxkiuaVboe3QxP"
    "W5ftbKKIeYIo1+bGB1YY9TwAfm+vbpXNOs3oe1h8QlqQajpyA+c6pHIM/vHII2Y+UliCEO8qeAxJAPODt0o121yrXy8+ui1e"
    "l+ySb+fFmdaMZKtNqLV/ebXKopXi3KScab9q4O6U5ScYtqSTUOHvrMLd3DebJC0jmMxCMY2qQTErknBGABtBA+UnGSB79Os3"
    "CKSTtre/e/vW8763d999G/yXF4ilDEV51Jyg5txcOVcqUHFukql2k48qUXGEopcjfKnKMdi2sgvyi3wWJKrtYK5IPGe/GR27"
    "nmuGdbzPiKGIsaltakTqTEWLABDuUd17468Y+vTsa5Z1dD3MPitf+GLkFgTI7FPmAJLAY2fe9B2Pc59euMYSrHsUMRqacFsq"
    "tFMwCqfmyGO0+vQepH5DpjFcsqu6PboYq1mTxaexEQ8tQzx5QqFO3GD1PI4Pr1/TGVc9ahXehorbBj5WwqGI+98xIxgEZxye"
    "1czq9T2qOK6CXejyyR5+2bbZh5XluiMHyx55z1BXA9R0OcEp4qMfs3e97v8Ar18uq3DF06tZtyxHLTaUeVxg0+ZtO/MndyTS"
    "ituZK8ZpuL4jUrXBW1+S3tDJvjTypERnRtuTgF+VAyASctknORXv0ql7zWsrd03Z697b7O2ytY/IMbjnBxwskoUHJtJxnGDn"
    "TfJdrldTWEUpRUpNTlzOSd4rWhstjAWyeaducgjI9hgfTkDriuSVa+58HQxFvh1NKLT7rGUhUuNzlSnU98n3wPQ/XrXLKuu5"
    "7dCvLoXVsDIjkLIFB+bbk7+54z1yRyBgZ9ga53WsezRxF0aEVgqFWUzs2zcMjd19fXiuaVa57VDEJdTQtLUSR5Kvh+VIyMnB"
    "GPpxnB/vexrnnVsezh8TdFq2s2VllYOyjY4GMknv16d+B1J7dK551uh7GHxNtfQqa7pU80BSOQBVlyZZlHyKGCsNpxkABiSc"
    "5GQOGrowuKjTn7y6bLro2tdettutnujyc9pV8Zh70Z2SlrKa+CKlGM7RfLFrlUm5SveLlCN4VNOb1eNDATCzQeckv2l3RUJc"
    "KCVYKFBIwVw3JLngZUn08O7S97W1rddNk1du3R6aabuzR8Lm+b89JRw8uR1I1PaOVoNySUpQlyRgpNNSglNOTc3eKUoSlxmo"
    "eP8AR7XTZ9YtbmPUIIvsoKWERnMKPJJtaUsyYLKgXacGNiM78rn3aWR4ipVVCa5W+b4ny3aSuo2Ur2bvdaSjty2Z4OXcOYmt"
    "io4WceSbUrc7UVJxUdIpKblyyd73anBacrTZs/8ACZaXYwNNqTR2ZlRAto88Ud5AGT7ksbSYAJCENu4Eg3hQrNXD/ZFaq+Wj"
    "eVr+8lJwdnvFqOttbq2vL7rbaiejhsixFdqGGTla6c0pOnKzV+SSjrZX0s7uL5XJyjEdH8TdDh8Qy6XfW0ts0TTxGQNGytJH"
    "KYkRSDhCwDH95sVcLkkENTfDmJnh1Xpu9+V2s9E48zfna6Xu8zevVWPqcNwhja2EhiqEuZS5HazTSlDmb8+W6S5FNy6JSTia"
    "XhT4haBeXlyt3faelvNMf7PNtK7u8KKCzTrtBiAyxJfaMAnlV3tx47IcVShFwjK6XvXSSTb0UXd819NFd3t1fKvTrcNYuhSj"
    "KlTk5RivaX5UlJt2jB83v30Vo3d7falyR0rr4hWNpaW11pWiXF3uhnmTdKkGUiVmJ2u2/cVMbgbc+W4cA7StctPIqlScoVqi"
    "jZxWzlrJ23StZPmje9udcrte57WWcNVZ1HTr1YwcZQjopS1m7bpcujUot81lUjytq6ZJH8TtKe0S/s9NuJXhUT3GHESCEO8b"
    "mIuAZfmTIyFU5C5WRghl8N11UdOc0r6Lq72TXNa6jo9bNtays4JyX0WG4QxCr+zqVFFt8sbK7vyqSUlFtR0a5rOTVnJRdNOa"
    "qa18T/K0N9Uj0krfTXUMNtHK0jBoGhgnunKxJ5yrGmf3oRwMxuNwbaN8Nw5zV/Yyqe4lJtq3xKU401eT5G5P7LlFu0ouzV3y"
    "Y7hmeHxc4zqqcrTUbc11FyjCy9nF8rnKCteTcZaOUXZHA6n8RLyTSNd8S2MFvJo2khntpZ7WSee58+aSK23gMBHETA8rNMEP"
    "7wIEO5Xf6OhkNONajharaqVNGk1GMeWKlO2nvS95QioOS91yclZxj+c1uBXCNOVepJtNTi5rVwlO7u5KSlHlTcdOVzc5O6nZ"
    "f//Z"
)
PROGRESSIVE_JPG = base64.b64decode(
    "/9j/4AAQSkZJRgABAgAAAQABAAD/wgARCAAYACgDACIAAREBAhEB/9sAQwAGBAUGBQQGBgUGBwcGCAoQCgoJCQoUDg8MEBcU"
    "GBgXFBYWGh0lHxobIxwWFiAsICMmJykqKRkfLTAtKDAlKCko/9sAQwEHBwcKCAoTCgoTKBoWGigoKCgoKCgoKCgoKCgoKCgo"
    "KCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgo/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAA"
    "AgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6"
    "Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXG"
    "x8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREA"
    "AgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5"
    "OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPE"
    "xcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oACAEAAAAAAPJtfR1ue6jR2dPAsbuls8x//9oACAEBEQAAAPf8"
    "vu8/xev/2gAIAQIRAAAA4vu/lPlPs/zv/9oACAEAAAEUALXRFSQERlhnpstdHfaDDDuQMf4YNKCkGMOjlSdri30lgqZj3szA"
    "sDXiHSJZrvMSICiEsBJa6IXIBjySFRSKi0oqybEdc4yTVtpj+WdyjzAWyDVvooBLQjfIAWVCNZsHji2uZ5I2bbAUmj1nRBa2"
    "bvq9mqXKboT5mnvYXc9s1kxmjugHDRp9t0e2kVLi9trZ2kdFaatKn0y+v57K1vIZb2AlJow/iXUdGW8tdPGp2XnahveE+d//"
    "2gAIAQERARQAq5m29ytmfmYbMpuGjSt1Mblqo4apiedvlbSRLBqrh1XjJq8JSK1CrhsNSnCe7mndf//aAAgBAhEBFADL82SS"
    "1MuzbazM9znCRxN5+0k5auPNTypYbBVMZztqMmkjKcCq2EjiozavTnKxxfhaGU4+fteafNKS0f8A/9oACAEAABUpAAN3AIA9"
    "Kzu56V2P16Vt57Z+lKrxhgAFbvgEnoDzyKPPuaPGOvsecA4BA/CtpkUAbieCDkqmRljk91FMwAKrJiQ/wErsQ7CAyhj8vFD5"
    "CCMtjrion+0Aui43Z4G7/9oACAEBERUpAA3X4H95x1ZfWLS8tGfyyauteq//2gAIAQIRFSkABLlls91LddpOCu9b6p605JPt"
    "pJRjrF6v4Zbn/9oACAEAACo/AM9PSv0oDn6V2o5z0+bGR1on+vXnI5OOOtfzIrg4z9PU5GeMDjAxlSOccjHB4pwcMRnI4zT4"
    "OO+R1DYIGemcjrkVlR67MDO04//aAAgBAREqPwAP+DqWe3ddbp/Luzof/9oACAECESo/AAS0WlknFuLVrPRLRNdbp6Ldd3sN"
    "eejbcm9P/9k="
)
GREY_JPG = base64.b64decode(
    "/9j/4AAQSkZJRgABAgAAAQABAAD/wAALCAAQABABAREA/9sAQwAKBwcIBwYKCAgICwoKCw4YEA4NDQ4dFRYRGCMfJSQiHyIh"
    "Jis3LyYpNCkhIjBBMTQ5Oz4+PiUuRElDPEg3PT47/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgED"
    "AwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RF"
    "RkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJ"
    "ytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/AOXt9CRvlxuLdyO3NXzoR+zEqCvocYB45Ge2cV2ltYWR"
    "aOFJoA8rMsUZkGW2/eAHfBzn071disrSfzbS2urWW6jyWhjdWZQCOSo6YP8AOv/Z"
)
LOSSY_WEBP = base64.b64decode(
    "UklGRo4AAABXRUJQVlA4IIIAAADQAQCdASoQAAwAAoBCJbACdAC9jijLmgD+9KDrbzDfn325bjfxoho7U1vAQzQVS49SVbIT"
    "1n5kLOa58Y9T0G+B2JnMtkFJ0L8IMPgULKqYs1smbxjC1OmfJ4nsE8aH9M6+PAHjQOjiVX/3kr6ob9ft18Xm3j/2wl3mH2H+"
    "v/PwAAAA"
)
LOSSLESS_ALPHA_WEBP = base64.b64decode(
    "UklGRtQAAABXRUJQVlA4TMcAAAAvBQABEM1VICICHogEAAAAAIABAAAAAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADAA"
    "AHggEgAAAAAA5z8AAAAAYAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAA9EAgAAAADg/AcAAAAAAAAAAAAAMAAAAAAAAAAA"
    "AAAAAAAAAgAAAAAA4IFAAgAAAACcf4ABAwYeMAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIOt2DCAYwXAAwQiGAwhGMBxA"
    "MILhAA=="
)


def write(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as file:
        file.write(data)


# --- JPEG ------------------------------------------------------------------------------------

def jpeg_with_segment(jpeg, marker, payload):
    """`jpeg` with a segment right after its start-of-image marker, where a camera writes one."""
    return jpeg[:2] + bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def exif_orientation(value):
    """An APP1 EXIF payload with one tag, Orientation (0x0112), little-endian TIFF."""
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1)
    tiff += struct.pack("<HHIHH", 0x0112, 3, 1, value, 0) + struct.pack("<I", 0)
    return b"Exif\x00\x00" + tiff


def icc_profile(size=560):
    """A colour profile's bytes as a decoder hands them on: a header that says its size, then
    padding (the blog keeps a profile as it is, without reading it)."""
    header = struct.pack(">I", size) + b"none" + b"\x04\x30\x00\x00" + b"mntrRGB XYZ "
    return header + b"\x00" * (size - len(header))


# --- PNG -------------------------------------------------------------------------------------

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width, height, bit_depth, colour_type, rows, extra=b""):
    """A PNG of `rows` (each row's bytes, filter type 0 added here), `extra` chunks before IDAT."""
    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + extra + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def iccp(profile_name, inflated_chunks):
    """An iCCP chunk whose profile, compressed, is the concatenation of `inflated_chunks`."""
    compressor = zlib.compressobj(9)
    compressed = b"".join(compressor.compress(piece) for piece in inflated_chunks) + compressor.flush()
    return chunk(b"iCCP", profile_name + b"\x00\x00" + compressed)


# --- GIF -------------------------------------------------------------------------------------

def lzw(indexes, min_code_size):
    """GIF's LZW of a frame's colour indexes, packed into data sub-blocks."""
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    table = {bytes([i]): i for i in range(clear)}
    next_code, size = end + 1, min_code_size + 1
    codes = [(clear, size)]
    current = b""
    for index in indexes:
        candidate = current + bytes([index])
        if candidate in table:
            current = candidate
            continue
        codes.append((table[current], size))
        if next_code < 4096:
            table[candidate] = next_code
            next_code += 1
            if next_code > (1 << size) and size < 12:
                size += 1
        current = bytes([index])
    if current:
        codes.append((table[current], size))
    codes.append((end, size))
    bits, count, out = 0, 0, bytearray()
    for code, width in codes:
        bits |= code << count
        count += width
        while count >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            count -= 8
    if count:
        out.append(bits & 0xFF)
    blocks = b"".join(bytes([len(out[i:i + 255])]) + bytes(out[i:i + 255]) for i in range(0, len(out), 255))
    return bytes([min_code_size]) + blocks + b"\x00"


def gif(width, height, palette, frames, loop=False):
    """A GIF89a: `frames` are (left, top, width, height, indexes, delay); a global palette of
    `palette` (RGB triples, a power of two of them)."""
    bits = max(1, (len(palette) - 1).bit_length())
    out = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80 | 0x70 | (bits - 1), 0, 0)
    out += b"".join(bytes(colour) for colour in palette)
    if loop:
        out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for left, top, frame_width, frame_height, indexes, delay in frames:
        if delay is not None:
            # Graphic control: dispose to the background (2), the delay, no transparency.
            out += b"\x21\xf9\x04" + bytes([2 << 2]) + struct.pack("<H", delay) + b"\x00\x00"
        out += b"\x2c" + struct.pack("<HHHHB", left, top, frame_width, frame_height, 0)
        out += lzw(indexes, max(2, bits))
    return out + b"\x3b"


def pictures():
    write("picture", "photo.jpg", PHOTO_JPG)
    write("picture", "progressive.jpg", PROGRESSIVE_JPG)
    write("picture", "grey.jpg", GREY_JPG)
    write("picture", "rotated-exif.jpg", jpeg_with_segment(PHOTO_JPG, 0xE1, exif_orientation(6)))
    write("picture", "colour-profile.jpg", jpeg_with_segment(PHOTO_JPG, 0xE2, b"ICC_PROFILE\x00\x01\x01" + icc_profile()))
    write("picture", "truncated-half.jpg", PHOTO_JPG[: len(PHOTO_JPG) // 2])
    write("picture", "truncated-700.jpg", PHOTO_JPG[:700])
    # Cut inside its scan, its end marker put back: every marker is there, the rows are not.
    write("picture", "truncated-half-end-marker.jpg", PHOTO_JPG[: len(PHOTO_JPG) // 2] + b"\xff\xd9")
    write("picture", "lossy.webp", LOSSY_WEBP)
    write("picture", "lossless-alpha.webp", LOSSLESS_ALPHA_WEBP)

    rgba = [b"".join(bytes((x * 60, y * 90, 128, 255 - x * 40)) for x in range(3)) for y in range(2)]
    write("picture", "rgba.png", png(3, 2, 8, 6, rgba))
    palette = chunk(b"PLTE", bytes((0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255))) + chunk(b"tRNS", b"\x00\xff\x80")
    write("picture", "palette.png", png(4, 4, 8, 3, [bytes((x + y) % 4 for x in range(4)) for y in range(4)], palette))
    write("picture", "grey16.png", png(2, 2, 16, 0, [b"\x00\x10\xff\xf0", b"\x80\x00\x7f\xff"]))
    write("picture", "colour-profile.png", png(2, 2, 8, 2, [b"\x10" * 6, b"\xf0" * 6], iccp(b"Display P3", [icc_profile()])))
    # 1 GiB of zeros, inflated from about 1 MB, in a 1 x 1 PNG.
    write("picture", "hostile-iccp-1gib.png",
          png(1, 1, 8, 2, [b"\x00\x00\x00"], iccp(b"bomb", (b"\x00" * (1 << 20) for _ in range(1 << 10)))))

    colours = [(0, 0, 0), (255, 255, 255), (255, 0, 0), (0, 0, 255)]
    write("picture", "still.gif", gif(2, 2, colours, [(0, 0, 2, 2, [0, 1, 2, 3], None)]))
    frames = [(0, 0, 4, 4, [(i + f) % 4 for i in range(16)], 10) for f in range(3)]
    write("picture", "animated.gif", gif(4, 4, colours, frames, loop=True))
    # 300 frames of one pixel, spread over a 6000 x 6000 canvas.
    frames = [((i * 20) % 6000, (i * 20) % 6000, 1, 1, [i % 4], 2) for i in range(300)]
    write("picture", "hostile-canvas-6000x6000-300-frames.gif", gif(6000, 6000, colours, frames, loop=True))

    # Not pictures: refused by their bytes.
    write("picture", "not-a-picture.svg", '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    write("picture", "not-a-picture.bmp", b"BM" + struct.pack("<IHHI", 58, 0, 0, 54) + struct.pack("<IiiHHII", 40, 1, 1, 1, 24, 0, 4) + b"\x00" * 20)


# --- Forms -----------------------------------------------------------------------------------

def form(boundary, parts, content_type=None):
    """A target input: the Content-Type value, a line break, then the body."""
    body = b""
    for headers, value in parts:
        body += b"--" + boundary.encode() + b"\r\n" + headers.encode() + b"\r\n\r\n" + value + b"\r\n"
    body += b"--" + boundary.encode() + b"--\r\n"
    content_type = content_type or f"multipart/form-data; boundary={boundary}"
    return content_type.encode() + b"\n" + body


def forms():
    tiny_png = png(1, 1, 8, 2, [b"\xff\x00\x00"])
    key = b"5f0c3a8e-3b8e-4c4e-9a59-0d6f2a1c7b11"
    chromium = "----WebKitFormBoundaryx8Hk3rXj2Ly6QeZn"
    write("multipart", "chromium-post-with-picture", form(chromium, [
        ('Content-Disposition: form-data; name="key"', key),
        ('Content-Disposition: form-data; name="title"', "Kites; and \"more\"".encode()),
        ('Content-Disposition: form-data; name="content"', "A day out.\r\n\r\n![a kite](/pictures/u1/p1/x.png)".encode()),
        ('Content-Disposition: form-data; name="picture"; filename="kite.png"\r\nContent-Type: image/png', tiny_png),
        ('Content-Disposition: form-data; name="alt"', b"A red kite"),
    ]))
    firefox = "---------------------------2904851733219812943573806781"
    write("multipart", "firefox-empty-file-input", form(firefox, [
        ('Content-Disposition: form-data; name="title"', "Été à Zürich".encode()),
        ('Content-Disposition: form-data; name="picture"; filename=""\r\nContent-Type: application/octet-stream', b""),
    ], content_type=f'multipart/form-data; charset=utf-8; boundary="{firefox}"'))
    write("multipart", "quoted-names", form("b", [
        ('content-disposition: form-data; name="a%22b"; filename="c\\"d.gif"', b"GIF89a\r\n--b-not\r\n"),
        ('Content-Disposition: form-data; name=plain', b""),
    ]))
    write("multipart", "cut-off", form("x", [('Content-Disposition: form-data; name="a"', b"1")])[:-12])
    write("multipart", "urlencoded", b"application/x-www-form-urlencoded\ntitle=a&content=b")


# --- Markdown --------------------------------------------------------------------------------

POST, COMMENT = 2, 0x80 | 3  # the first byte: whose text (high bit: a comment), the top heading


def markdowns():
    name = hashlib.sha256(b"kite").hexdigest()
    own = f"/pictures/u1/p1/{name}-1920x1080.jpg"
    others = f"/pictures/u2/p9/{name}-20x10.gif"
    huge = f"/pictures/u1/p1/{name}-8000x4294967295.png"
    write("markdown", "post-with-pictures", bytes([POST]) + f"""# A day out

![A *red* "kite"]({own}) and a small one: ![]({own.replace('1920x1080.jpg', '20x10.gif')})

Someone else's: ![theirs]({others}), a made-up size: ![huge]({huge}),
another site's: ![cat](https://cats.example/cat.png), linked: [![logo]({own})](https://e.com).
""".encode())
    write("markdown", "comment-with-a-picture", bytes([COMMENT]) + f"Look: ![kite]({own})\n".encode())
    write("markdown", "links-and-html", bytes([POST]) + b"""## Links

See https://example.com/a_(b). and <https://e.com>, [mail](mailto:a@b.c), [here](/posts/p1),
[bad](javascript:alert(1)), [tab](java\tscript:x), [data](data:text/html,<b>x</b>), <b>bold</b>
<script>alert("x")</script>

<div onclick="x()">
raw *block*
</div>
""")
    write("markdown", "table-lists-code", bytes([POST]) + b"""| a | b |
|:--|--:|
| `1` | **2** |

1. one
2. two
   - nested ~~struck~~
   - > quoted

```rust
fn main() { println!("<hi>"); }
```

---
Line one
line two  
hard break\\
""")
    write("markdown", "right-to-left", bytes([COMMENT]) + "שלום **עולם**\n\nمرحبا بالعالم\n".encode())
    write("markdown", "cut-short-copy", bytes([POST]) + ("word " * 39 + "**bold te").encode())
    # The first picture the page shows: one in a link the page does not write is shown; the cut
    # of a short copy falls in the next one.
    write("markdown", "first-picture", bytes([POST]) + f"""[![in a dead link]({own})](javascript:x) [![linked]({own})](https://e.com)

{"word " * 20}![A red kite <b>at</b> dawn]({own}""".encode())


# --- Import files ----------------------------------------------------------------------------

def export(*items, sealed=True):
    """An export file of version 2: the header, the items, and the last line that says what they
    are and their SHA-256 (which `handler import` checks; the fuzz target checks the lines without
    it, since a mutated file cannot make its digest)."""
    lines = [{"format": "cosmos-blog", "version": 2}] + list(items)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if not sealed:
        return text
    counts = {"users": 0, "posts": 0, "comments": 0, "likes": 0, "pictures": 0, "revisions": 0}
    for item in items:
        kind = str(item.get("type")) + "s"
        if kind in counts:
            counts[kind] += 1
    if counts["revisions"] == 0:
        del counts["revisions"]  # absent from a file that has none
    end = {**counts, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    return text + json.dumps({"format": "cosmos-blog", "end": end}) + "\n"


def one_pixel_png():
    """A 1 × 1 PNG, made here: a picture line's bytes."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


def imports():
    user = {"id": "u1", "type": "user", "userId": "u1", "username": "ada"}
    renamed = {"id": "u2", "type": "user", "userId": "u2", "username": "Zoë", "renamedAt": "2024-05-01T10:00:00.000Z"}
    post = {"id": "p1", "type": "post", "postId": "p1", "userId": "u1", "userUsername": "ada", "title": "Kites",
            "content": "A day out.\n\n![kite](/pictures/u1/p1/x.png)", "commentCount": 1, "likeCount": 1,
            "creationDate": "2024-05-01T09:00:00.000Z", "editedAt": "2024-05-01T09:30:00.000Z"}
    comment = {"id": "c1", "type": "comment", "postId": "p1", "userId": "u2", "userUsername": "Zoë", "content": "Nice!",
               "creationDate": "2024-05-01T09:10:00.000Z"}
    like = {"id": "like-u2", "type": "like", "postId": "p1", "userId": "u2", "userUsername": "Zoë",
            "creationDate": "2024-05-01T09:11:00.000Z"}
    png = one_pixel_png()
    picture = {"type": "picture", "postId": "p1", "userId": "u1", "name": hashlib.sha256(png).hexdigest() + "-1x1.png",
               "bytes": base64.b64encode(png).decode()}
    write("import_line", "export", export(user, renamed, post, comment, like, picture))
    write("import_line", "export-crlf-blank-lines", export(user, {**post, "commentCount": 0, "likeCount": 0}).replace("\n", "\r\n") + "\r\n  \r\n")
    write("import_line", "comment-before-its-post", export(user, comment, post))
    write("import_line", "unknown-type", export(user, {"id": "x", "type": "reservation"}))
    write("import_line", "bad-id", export({**user, "id": "a/b", "userId": "a/b"}))
    write("import_line", "counts-not-the-files", export(user, post))
    write("import_line", "cut-short", export(user, renamed, post, comment, like, sealed=False))
    write("import_line", "old-header", '{"format": "cosmos-blog", "version": 0}\n')
    write("import_line", "version-1", '{"format": "cosmos-blog", "version": 1}\n')
    write("import_line", "empty", b"")
    # Tags, checked as the API checks them: kept in four languages and in words of two scripts;
    # refused as a dot segment however typed, and as a word of two scripts.
    zero = {**post, "commentCount": 0, "likeCount": 0}
    write("import_line", "tagged", export(user, {**zero, "tags": ["Kites", "модель", "Straße", "año", "Azure функции"]}))
    write("import_line", "tag-dot-segment", export(user, {**zero, "tags": ["ok", "．．"]}))
    write("import_line", "tag-mixed-scripts", export(user, {**zero, "tags": ["Rսst"]}))
    # Revisions after their post's comments and likes, numbered below its revisionCount; a draft
    # and a scheduled post (its time with it); a comment on a draft, which is refused.
    def revision(number):
        return {"id": f"revision-{number}", "type": "revision", "postId": "p1", "number": number, "title": f"Kites {number}",
                "content": "An earlier day.", "writtenAt": "2024-05-01T09:00:00.000Z", "replacedAt": "2024-05-01T09:30:00.000Z"}
    write("import_line", "revisions", export(user, renamed, {**post, "revisionCount": 22}, comment, like, revision(20), revision(21)))
    write("import_line", "scheduled", export(user, {**zero, "status": "scheduled", "publishAt": "2030-01-01T09:00:00.000Z"}))
    write("import_line", "comment-on-a-draft", export(user, renamed, {**post, "status": "draft"}, comment, like))


# --- the change log ----------------------------------------------------------------------------

def change_logs():
    """The change log as `changes::append` stores it, then names appended, one a line."""
    log = {"id": "changeLog", "type": "changeLog", "began": "2026-11-28T09:00:00.000Z/3f1c",
           "since": 12, "names": ["p/p1", "feed", "up/u1", "t/kites"]}
    write("change_log", "log-then-names", json.dumps(log) + "\np/p2\nfeed\nu/u2\n")
    write("change_log", "never-written", "null\np/p1\n")
    write("change_log", "full", json.dumps({**log, "names": ["p/%d" % n for n in range(64)]}) + "\np/new\n")
    write("change_log", "long-names", json.dumps(log) + "\n" + "p/" + "x" * 2000 + "\nfeed\n")
    write("change_log", "numbered-at-the-end", json.dumps({**log, "since": 2 ** 53 - 2}) + "\np/p1\np/p2\n")
    write("change_log", "damaged", '{"began": 7, "names": "feed"}\np/p1\n')


# --- search ------------------------------------------------------------------------------------

def searches():
    """A reader's query, then a post's text to cut into words and make a snippet of."""
    text = "Partitioning kites: how a partition key spreads the load.\nDie Partitionen, las particiones, модели."
    write("search", "words-phrase-minus", 'kites "partition key" -storm -"hot partition"\n' + text)
    write("search", "four-languages", "kites Partitionen particiones модели\n" + text)
    write("search", "stop-words-only", "the und и\n" + text)
    write("search", "unclosed-quote", 'kite "partition\n' + text)
    write("search", "store-syntax", "SELECT * FROM c WHERE c.id = '1' OR 1=1 --\n" + text)
    write("search", "mixed-scripts", "Сosmos\n" + text)
    write("search", "control", "kite\x00\x1b[31m\n" + text)
    write("search", "compatibility-forms", "ﬁle ２０２４ Ⅻ café naïve Straße\nThe ﬁle of ２０２４: café, naïve, Straße.")
    write("search", "many-words", " ".join(["kite"] * 1000) + "\n" + "kite " * 500)
    write("search", "long-word", "a" * 300 + "\n" + "я" * 5000)
    write("search", "punctuation", "*** ??? :: -- \"\"\n...!!!")


if __name__ == "__main__":
    pictures()
    forms()
    markdowns()
    imports()
    change_logs()
    searches()
