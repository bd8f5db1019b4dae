//! The convolution address generator (`docs/COMMANDS.md`, WINDOW): which
//! input pixel a windowed pass streams at each position, so that a
//! convolution reads its input image in place instead of host-built im2col
//! patches.
//!
//! An image of `h x w` pixels is one pixel per line, row by row, the images
//! one after another. Stream position t is output pixel `(oy, ox)` of image
//! `img`; it reads the input pixel under kernel element `(ky, kx)`, or
//! nothing where that pixel is in the padding.

use sysgrad_isa::command::field;

/// The window: image and output sizes, stride, kernel element, padding and
/// the images a stream covers. Every field fits its command field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Window {
    pub w: u16,
    pub h: u16,
    pub ow: u16,
    pub oh: u16,
    pub stride: u16,
    pub ky: u16,
    pub kx: u16,
    pub pad: u16,
    pub images: u16,
}

impl Window {
    /// The value of WINDOW argument `name`.
    pub fn arg(&self, name: &str) -> u64 {
        u64::from(match name {
            "w" => self.w,
            "h" => self.h,
            "ow" => self.ow,
            "oh" => self.oh,
            "stride" => self.stride,
            "ky" => self.ky,
            "kx" => self.kx,
            "pad" => self.pad,
            "images" => self.images,
            other => panic!("WINDOW has no argument {other}"),
        })
    }

    /// The window from WINDOW's argument values (each fits its field).
    pub fn from_args(value: impl Fn(&str) -> u64) -> Window {
        let v = |n: &str| value(n) as u16;
        Window {
            w: v("w"),
            h: v("h"),
            ow: v("ow"),
            oh: v("oh"),
            stride: v("stride"),
            ky: v("ky"),
            kx: v("kx"),
            pad: v("pad"),
            images: v("images"),
        }
    }

    /// ZERO_SIZE: a size, the stride or the image count is 0.
    pub fn has_zero_size(&self) -> bool {
        [self.w, self.h, self.ow, self.oh, self.stride, self.images].contains(&0)
    }

    /// Stream positions the window covers: `images * oh * ow` (a windowed
    /// pass's `n` must equal it).
    pub fn positions(&self) -> usize {
        usize::from(self.images) * usize::from(self.oh) * usize::from(self.ow)
    }

    /// Lines of the images from the base address: `images * h * w` (the
    /// range ADDRESS_RANGE checks for windowed X and dX).
    pub fn span(&self) -> usize {
        usize::from(self.images) * usize::from(self.h) * usize::from(self.w)
    }

    /// The line, from the images' base, that stream position `t` reads (or
    /// writes); `None` at a padding position.
    pub fn line(&self, t: usize) -> Option<usize> {
        let [w, h, ow, oh, s, ky, kx, pad] = [
            self.w,
            self.h,
            self.ow,
            self.oh,
            self.stride,
            self.ky,
            self.kx,
            self.pad,
        ]
        .map(i64::from);
        let t = t as i64;
        let (img, r) = (t / (oh * ow), t % (oh * ow));
        let (oy, ox) = (r / ow, r % ow);
        let (iy, ix) = (oy * s + ky - pad, ox * s + kx - pad);
        let inside = (0..h).contains(&iy) && (0..w).contains(&ix);
        inside.then(|| (img * h * w + iy * w + ix) as usize)
    }
}

/// The buffer lines a stream touches at its positions: `base + t`, or
/// `base` + the window's line of t (none at padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lines {
    Run(usize),
    Window(usize, Window),
}

impl Lines {
    /// The line of stream position `t`, `None` at a window's padding.
    pub fn at(&self, t: usize) -> Option<usize> {
        match self {
            Lines::Run(base) => Some(base + t),
            Lines::Window(base, win) => win.line(t).map(|l| base + l),
        }
    }
}

// The fields are where `Window`'s widths say.
const _: () = assert!(field::WIN_W.bits <= 16 && field::WIN_IMAGES.bits <= 16);

/// Random windows, for property tests.
#[cfg(test)]
pub(crate) mod strategy {
    use super::*;
    use proptest::prelude::*;

    /// Any window, every field over its whole range.
    pub(crate) fn window() -> impl Strategy<Value = Window> {
        let f = |f: sysgrad_isa::command::Field| 0..=f.max() as u16;
        (
            (
                f(field::WIN_W),
                f(field::WIN_H),
                f(field::WIN_OW),
                f(field::WIN_OH),
            ),
            (
                f(field::WIN_STRIDE),
                f(field::WIN_KY),
                f(field::WIN_KX),
                f(field::WIN_PAD),
            ),
            any::<u16>(),
        )
            .prop_map(|((w, h, ow, oh), (stride, ky, kx, pad), images)| Window {
                w,
                h,
                ow,
                oh,
                stride,
                ky,
                kx,
                pad,
                images,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3x3 stride-1 pad-1 window over a 4x4 image, read back as the
    /// 4x4 output's input pixels for the kernel's top-left element.
    #[test]
    fn top_left_element_of_a_padded_3x3_kernel() {
        let win = Window {
            w: 4,
            h: 4,
            ow: 4,
            oh: 4,
            stride: 1,
            ky: 0,
            kx: 0,
            pad: 1,
            images: 2,
        };
        let lines: Vec<Option<usize>> = (0..win.positions()).map(|t| win.line(t)).collect();
        // Output (0, *) and (*, 0) read the padding; (oy, ox) reads (oy-1, ox-1).
        assert_eq!(lines[0], None);
        assert_eq!(lines[5], Some(0));
        assert_eq!(lines[15], Some(2 * 4 + 2));
        // The second image starts 16 lines on.
        assert_eq!(lines[16 + 5], Some(16));
        assert_eq!(lines.iter().flatten().count(), 2 * 9);
        assert_eq!(win.span(), 32);
    }

    /// Stride 2: output (oy, ox) reads input (2 oy + ky - pad, 2 ox + kx - pad).
    #[test]
    fn stride_two_skips_pixels() {
        let win = Window {
            w: 5,
            h: 5,
            ow: 2,
            oh: 2,
            stride: 2,
            ky: 2,
            kx: 1,
            pad: 0,
            images: 1,
        };
        let lines: Vec<Option<usize>> = (0..4).map(|t| win.line(t)).collect();
        assert_eq!(lines, [Some(11), Some(13), Some(21), Some(23)]);
    }
}
