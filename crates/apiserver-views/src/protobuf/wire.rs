//! The protobuf wire format, read-only: varints and length-delimited fields are all Kubernetes'
//! generated messages use (fixed-width fields are skipped: none is needed).

use super::DecodeError;

/// One field as it appears on the wire.
pub enum WireValue<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// 8 bytes, skipped: no field in scope uses fixed64.
    Fixed64,
    /// 4 bytes, skipped: no field in scope uses fixed32.
    Fixed32,
}

/// Iterates over `(field number, value)` pairs of one message.
pub struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0 }
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.position) else {
                return Err(self.malformed("truncated varint"));
            };
            self.position += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.malformed("varint longer than 10 bytes"))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .position
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.malformed("field runs past the end of the message"));
        };
        let slice = &self.bytes[self.position..end];
        self.position = end;
        Ok(slice)
    }

    fn malformed(&self, reason: &str) -> DecodeError {
        DecodeError::Malformed(format!("{reason} at byte {}", self.position))
    }

    /// The next field, or `None` at the end of the message.
    pub fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, DecodeError> {
        if self.position >= self.bytes.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number =
            u32::try_from(key >> 3).map_err(|_| self.malformed("field number out of range"))?;
        if number == 0 {
            return Err(self.malformed("field number 0"));
        }
        let value = match key & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                WireValue::Fixed64
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| self.malformed("length out of range"))?;
                WireValue::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                WireValue::Fixed32
            }
            other => return Err(self.malformed(&format!("unsupported wire type {other}"))),
        };
        Ok(Some((number, value)))
    }
}
