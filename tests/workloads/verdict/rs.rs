// rs.rs MODE - Rust shapes.
//   0  Box::leak of 300 bytes kept in a static (still reachable), and
//      mem::forget of a 310-byte Vec (definitely lost)
//   1  an Rc cycle of two nodes (1 definitely, 1 indirectly lost)
//   2  a thread that ends (joined) having forgotten a 320-byte Vec (lost)
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicPtr, Ordering};

// Exported: the store to it stays.
#[no_mangle]
pub static KEEP: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

struct Node {
    next: RefCell<Option<Rc<Node>>>,
    _pad: [u64; 4],
}

// The compiler must believe the block is used (no allocation optimised
// away): its address read back through a volatile load.
fn used<T>(p: *const T) {
    unsafe { std::ptr::read_volatile(&p) };
}

#[inline(never)]
fn leak_and_forget() {
    let kept: &'static mut [u8] = Box::leak(vec![1u8; 300].into_boxed_slice());
    KEEP.store(kept.as_mut_ptr(), Ordering::SeqCst);
    let v = vec![2u8; 310];
    used(v.as_ptr());
    std::mem::forget(v);
}

#[inline(never)]
fn rc_cycle() {
    let a = Rc::new(Node { next: RefCell::new(None), _pad: [1; 4] });
    let b = Rc::new(Node { next: RefCell::new(Some(a.clone())), _pad: [2; 4] });
    *a.next.borrow_mut() = Some(b.clone());
    used(Rc::as_ptr(&a));
}

#[inline(never)]
fn thread_forgets() {
    std::thread::spawn(|| {
        let v = vec![3u8; 320];
        used(v.as_ptr());
        std::mem::forget(v);
    })
    .join()
    .unwrap();
}

fn main() {
    let mode: u32 = std::env::args().nth(1).map_or(0, |s| s.parse().unwrap());
    match mode {
        0 => leak_and_forget(),
        1 => rc_cycle(),
        2 => thread_forgets(),
        _ => {}
    }
}
