//! A queue that one event fills and the next read empties: the packets a socket queues for its
//! driver (`poll_transmit`), the segments a subflow hands to its connection. It never holds
//! items across events, so a vector read by a cursor and cleared once read does the work of a
//! deque with fewer instructions (no wrapping ring; these queues carry every packet of a run).

/// Items in order: `push` appends, `pop` takes the oldest; once `pop` finds it empty the
/// storage is reused from the start.
#[derive(Clone, Debug)]
pub struct Batch<T> {
    items: Vec<T>,
    /// Items already taken: `items[taken..]` wait.
    taken: usize,
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Batch {
            items: Vec::new(),
            taken: 0,
        }
    }
}

impl<T: Copy> Batch<T> {
    #[inline]
    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    /// The oldest waiting item.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let next = self.items.get(self.taken).copied();
        if next.is_some() {
            self.taken += 1;
        } else {
            self.items.clear();
            self.taken = 0;
        }
        next
    }

    /// Items waiting.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len() - self.taken
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_leave_in_order_and_the_storage_is_reused_once_read() {
        let mut b = Batch::default();
        assert_eq!(b.pop(), None);
        b.push(1);
        b.push(2);
        assert_eq!((b.len(), b.pop()), (2, Some(1)));
        b.push(3);
        assert_eq!(b.len(), 2);
        assert_eq!((b.pop(), b.pop(), b.pop()), (Some(2), Some(3), None));
        assert!(b.is_empty() && b.items.is_empty());
        b.push(4);
        assert_eq!((b.pop(), b.pop()), (Some(4), None));
    }
}
