//! Sets of subflows, as the connection records where a data segment went and a scheduler says
//! where to send one.

/// A set of subflows, one bit per subflow index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowSet(pub u32);

impl SubflowSet {
    pub const EMPTY: SubflowSet = SubflowSet(0);
    pub fn one(i: usize) -> SubflowSet {
        SubflowSet(1 << i)
    }
    pub fn contains(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }
    pub fn insert(&mut self, i: usize) {
        self.0 |= 1 << i;
    }
    pub fn remove(&mut self, i: usize) {
        self.0 &= !(1 << i);
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                i
            })
        })
    }
}
