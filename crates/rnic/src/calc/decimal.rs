//! The decimals a user types, multiplied exactly. `calc qd` divides bandwidth × round trip
//! by the frame size and rounds down; in binary floating point 100 × 33.3 / 10,000 is
//! 332.99999999999994, so a depth exactly on a whole number would print one too low. Each
//! input is read back as the shortest decimal that names its `f64` (what the user typed,
//! for up to 15 significant digits), and products and the floor are taken on whole numbers.

/// A non-negative decimal, `digits / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    digits: u128,
    scale: u32,
}

impl Decimal {
    /// A whole number.
    pub const fn whole(n: u64) -> Decimal {
        Decimal {
            digits: n as u128,
            scale: 0,
        }
    }

    /// The shortest decimal that reads back as `x`; `None` for a negative or non-finite `x`,
    /// or one whose digits do not fit 128 bits (beyond every range `calc` takes).
    pub fn of(x: f64) -> Option<Decimal> {
        if !x.is_finite() || x < 0.0 {
            return None;
        }
        // Rust prints an f64 as its shortest round-trip decimal, never in exponent form.
        let text = x.to_string();
        let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
        let digits = format!("{whole}{fraction}").parse().ok()?;
        Some(Decimal {
            digits,
            scale: u32::try_from(fraction.len()).ok()?,
        })
    }

    /// `self × other`, exactly; `None` if the digits overflow.
    pub fn times(self, other: Decimal) -> Option<Decimal> {
        Some(Decimal {
            digits: self.digits.checked_mul(other.digits)?,
            scale: self.scale.checked_add(other.scale)?,
        })
    }

    /// ⌊self / divisor⌋, exactly; `None` if the divisor's scaling overflows or it is 0.
    pub fn floor_div(self, divisor: u64) -> Option<u128> {
        let scaled = u128::from(divisor).checked_mul(10u128.checked_pow(self.scale)?)?;
        self.digits.checked_div(scaled)
    }

    /// `self / divisor` as an `f64`: the whole part exact (as [`Decimal::floor_div`]) and the
    /// remainder's fraction added, so a quotient on a whole number is that number (in binary
    /// floating point 33.3 × 100 × 1000 / 8 / 1250 is 332.99999999999994); `None` as
    /// `floor_div`.
    pub fn div_to_f64(self, divisor: u64) -> Option<f64> {
        let scaled = u128::from(divisor).checked_mul(10u128.checked_pow(self.scale)?)?;
        let whole = self.digits.checked_div(scaled)?;
        let rest = self.digits % scaled;
        Some(whole as f64 + rest as f64 / scaled as f64)
    }

    /// The `f64` nearest the decimal (whose shortest form is the decimal itself, for up to
    /// 15 significant digits).
    pub fn to_f64(self) -> f64 {
        let digits = self.digits.to_string();
        let scale = self.scale as usize;
        let text = if scale == 0 {
            digits
        } else {
            let padded = format!("{digits:0>width$}", width = scale + 1);
            let (whole, fraction) = padded.split_at(padded.len() - scale);
            format!("{whole}.{fraction}")
        };
        text.parse().unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_decimal_is_read_back_digit_for_digit() {
        assert_eq!(
            Decimal::of(33.3),
            Some(Decimal {
                digits: 333,
                scale: 1
            })
        );
        assert_eq!(Decimal::of(100.0), Some(Decimal::whole(100)));
        assert_eq!(
            Decimal::of(1e-6),
            Some(Decimal {
                digits: 1,
                scale: 6
            })
        );
        assert_eq!(Decimal::of(-1.0), None);
        assert_eq!(Decimal::of(f64::NAN), None);
        assert_eq!(Decimal::of(f64::INFINITY), None);
        // 1e300 has 301 digits: more than 128 bits hold.
        assert_eq!(Decimal::of(1e300), None);
    }

    #[test]
    fn products_and_floors_are_exact_where_floats_fall_short() {
        // 100 × 33.3 = 3330 exactly; in floating point 100 × 33.3 / 10 is 332.99999999999994.
        let p = Decimal::of(100.0)
            .unwrap()
            .times(Decimal::of(33.3).unwrap())
            .unwrap();
        assert_eq!(p.floor_div(10), Some(333));
        assert!((100.0 * 33.3 / 10.0_f64).floor() < 333.0);
        assert_eq!(p.to_f64(), 3330.0);
        // 2 × 0.1 × 4.9 = 0.98, where floating point makes it 0.9800000000000001.
        let rtt = Decimal::whole(2)
            .times(Decimal::of(0.1).unwrap())
            .and_then(|d| d.times(Decimal::of(4.9).unwrap()))
            .unwrap();
        assert_eq!(rtt.to_f64().to_string(), "0.98");
        assert_ne!((2.0 * 0.1 * 4.9_f64).to_string(), "0.98");
        assert_eq!(Decimal::of(5e-7).unwrap().to_f64(), 5e-7);
        assert_eq!(Decimal::whole(7).floor_div(0), None);
    }
}
