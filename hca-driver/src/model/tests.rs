//! Register-level tests of the model (no DMA).
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;

use super::*;

#[derive(Default)]
struct Env {
    irqs: RefCell<Vec<u32>>,
}

impl DeviceEnv for Env {
    fn dma_read(&self, iova: u64, _buf: &mut [u8]) -> Result<(), DmaFault> {
        Err(DmaFault { iova })
    }
    fn dma_write(&self, iova: u64, _data: &[u8]) -> Result<(), DmaFault> {
        Err(DmaFault { iova })
    }
    fn bus_master(&self) -> bool {
        true
    }
    fn raise_irq(&self, vector: u32) {
        self.irqs.borrow_mut().push(vector);
    }
}

fn model() -> (AsicModel, Env) {
    (
        AsicModel::new(ModelConfig::switch(0x1234_5678_9abc_def0, 4)),
        Env::default(),
    )
}

#[test]
fn identity_registers() {
    let (mut m, _) = model();
    assert_eq!(m.read(ID), 0x4152_4131);
    assert_eq!(m.read(VERSION), 0x0001_0001);
    assert_eq!(m.read(NODE_GUID_LO), 0x9abc_def0);
    assert_eq!(m.read(NODE_GUID_HI), 0x1234_5678);
    let caps = m.read(CAPS);
    assert_eq!(caps & CAPS_SWITCH, CAPS_SWITCH);
    assert_eq!(caps & CAPS_QP1, CAPS_QP1, "v1.1: GMPs on QP1");
    assert_eq!((caps >> 8) & 0xFF, 4);
    assert_eq!(m.read(FDB_CAP) & 0xFFFF, 768);
    assert_eq!(m.read(INT_MASK), INT_ALL);
}

#[test]
fn lft_window_is_the_attribute_block_byte_for_byte() {
    let (mut m, env) = model();
    m.write(LFT_BLOCK, 2, &env);
    m.write(LFT_WIN + 4, 0x0403_0201, &env); // LIDs 132..=135
    m.write(LFT_TOP, 200, &env);
    let b = m.lft_block(2).unwrap();
    assert_eq!(&b[4..8], &[1, 2, 3, 4]);
    assert_eq!(b[0], 0xFF, "reset value is drop");
    assert_eq!(m.lft_port(132), Some(1));
    assert_eq!(m.lft_port(135), Some(4));
    assert_eq!(m.lft_port(128), None);
    // Above LFT_TOP: dropped whatever the entry.
    m.write(LFT_TOP, 133, &env);
    assert_eq!(m.lft_port(134), None);
    assert_eq!(m.read(LFT_WIN + 4), 0x0403_0201);
    // Out-of-range block: REG_ACCESS.
    m.write(LFT_BLOCK, 768, &env);
    assert_eq!(m.read(ERR_CAUSE) & ERR_REG_ACCESS, ERR_REG_ACCESS);
    // Reset clears the table.
    m.write(CTRL, CTRL_RESET, &env);
    assert_eq!(m.lft_block(2).unwrap(), [0xFF; 64]);
    assert_eq!(m.read(CTRL) & CTRL_RESET, 0);
}

#[test]
fn reserved_offsets_and_doorbell_overflow_are_errors() {
    let (mut m, env) = model();
    assert_eq!(m.read(0x0F00), 0);
    assert_eq!(m.read(ERR_CAUSE), ERR_REG_ACCESS);
    assert_eq!(m.read(ERR_ADDR_LO), 0x0F00);
    m.write(ERR_CAUSE, ERR_REG_ACCESS, &env);
    assert_eq!(m.read(ERR_CAUSE), 0);
    m.write(RXQ_SIZE, 4, &env);
    m.write(RXQ_PROD, 17, &env); // more than 16 entries ahead of CONS
    assert_eq!(m.read(RXQ_PROD), 0, "rejected, index unchanged");
    assert_eq!(m.read(ERR_CAUSE) & ERR_DOORBELL, ERR_DOORBELL);
    m.write(RXQ_PROD, 16, &env);
    assert_eq!(m.read(RXQ_PROD), 16);
    assert_eq!(m.read(STATUS) & STATUS_FATAL, 0, "not fatal");
}

#[test]
fn port_state_machine_follows_ra1() {
    let (mut m, env) = model();
    let ps = |m: &mut AsicModel| m.read(port_base(2) + P_STATE);
    assert_eq!(ps(&mut m), logical::DOWN | (phys::POLLING << 4));
    // Arm from Down is ignored.
    m.write(port_base(2) + P_STATE, logical::ARMED << 8, &env);
    assert_eq!(ps(&mut m) & 0xF, logical::DOWN);
    m.link_up(2, 2, 4, 0, &env);
    assert_eq!(ps(&mut m), logical::INIT | (phys::LINK_UP << 4));
    // Activate from Init is ignored; Arm then Activate work.
    m.write(port_base(2) + P_STATE, logical::ACTIVE << 8, &env);
    assert_eq!(ps(&mut m) & 0xF, logical::INIT);
    m.write(port_base(2) + P_STATE, logical::ARMED << 8, &env);
    m.write(port_base(2) + P_STATE, logical::ACTIVE << 8, &env);
    assert_eq!(ps(&mut m) & 0xF, logical::ACTIVE);
    assert_eq!(m.read(port_base(2) + P_LINK_WIDTH) >> 16 & 0xFF, 2);
    // Host requests Down on a LinkUp port: logical Down now, the wire is asked to retrain.
    m.write(port_base(2) + P_STATE, logical::DOWN << 8, &env);
    assert_eq!(ps(&mut m), logical::DOWN | (phys::LINK_UP << 4));
    assert_eq!(m.poll_link_request(), Some((2, LinkRequest::Down)));
    m.link_down(2, &env);
    assert_eq!(ps(&mut m), logical::DOWN | (phys::POLLING << 4));
    assert_eq!(
        m.read(port_base(2) + P_LINK_DOWN) >> 16,
        1,
        "one LinkUp exit counted"
    );
    // Disable / re-enable.
    m.write(port_base(2) + P_STATE, phys::DISABLED << 12, &env);
    assert_eq!(m.poll_link_request(), Some((2, LinkRequest::Disable)));
    m.link_up(2, 2, 4, 0, &env);
    assert_eq!(
        ps(&mut m) >> 4 & 0xF,
        phys::DISABLED,
        "a disabled port does not train"
    );
    m.write(port_base(2) + P_STATE, phys::POLLING << 12, &env);
    assert_eq!(m.poll_link_request(), Some((2, LinkRequest::Poll)));
    // Every change set PORT_CHANGE bit 2.
    assert_eq!(m.read(PORT_CHANGE), 1 << 2);
}

#[test]
fn port_change_interrupt_is_edge_like_and_respects_masks() {
    let (mut m, env) = model();
    m.link_up(1, 2, 4, 0, &env);
    assert!(env.irqs.borrow().is_empty(), "INT_EN = 0: no message");
    assert_ne!(
        m.read(INT_CAUSE) & INT_PORT,
        0,
        "the cause is still recorded"
    );
    m.write(INT_CAUSE, INT_PORT, &env);
    m.write(PORT_CHANGE, 0xFFFF_FFFF, &env);
    m.write(CTRL, CTRL_INT_EN, &env);
    m.write(INT_MASK, 0, &env);
    m.link_up(3, 2, 4, 0, &env);
    m.link_up(4, 2, 4, 0, &env);
    assert_eq!(
        *env.irqs.borrow(),
        vec![regs::VEC_PORT],
        "one message per 0->1 of the cause"
    );
    assert_eq!(m.read(PORT_CHANGE), (1 << 3) | (1 << 4));
    // Masked cause: no message.
    m.write(INT_CAUSE, INT_PORT, &env);
    m.write(INT_MASK, INT_PORT, &env);
    m.link_down(3, &env);
    assert_eq!(env.irqs.borrow().len(), 1);
}

#[test]
fn smps_before_ready_are_dropped_and_counted() {
    let (mut m, env) = model();
    m.link_up(1, 2, 4, 0, &env);
    let mut mad = [0u8; 256];
    mad[0] = 1;
    mad[1] = 0x81;
    assert_eq!(
        m.receive(1, 0xFFFF, 0xFFFF, 0, &mad, &env),
        RxOutcome::NotReady
    );
    assert_eq!(m.counter(RX_DROP_NOT_READY), 1);
    assert_eq!(m.read(port_base(1) + P_VL15_DROPPED), 1);
    // Receive on port 0 or a port that does not exist: malformed.
    assert_eq!(
        m.receive(9, 0xFFFF, 0xFFFF, 0, &mad, &env),
        RxOutcome::Malformed
    );
}
