#!/usr/bin/env python3
# Writes small hand-made ONNX models (tests/fuzz/corpus/onnx/probe_*.onnx and the
# tests/fuzz/regressions/onnx/ files that are not fuzzer artifacts) into the folder given as
# argument: one op each, with attributes and constants at the limits of 64-bit shape arithmetic.
# A minimal protobuf encoder, so that it needs no onnx Python package. Field numbers: onnx.proto.
# Usage: python3 tests/fuzz/corpus/make_onnx_probes.py OUT_DIR
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
def varint(n):
    n &= (1<<64)-1
    out=b''
    while True:
        b=n&0x7f; n>>=7
        if n: out+=bytes([b|0x80])
        else: out+=bytes([b]); return out
def key(f,w): return varint((f<<3)|w)
def vi(f,n): return key(f,0)+varint(n)
def ld(f,b):
    if isinstance(b,str): b=b.encode()
    return key(f,2)+varint(len(b))+b
def f32(f,x): return key(f,5)+struct.pack('<f',x)
def tensor(name, dims, dtype, i64=None, f=None):
    b=b''.join(vi(1,d) for d in dims)+vi(2,dtype)+ld(8,name)
    if i64 is not None: b+=ld(7,b''.join(varint(v) for v in i64))
    if f is not None: b+=ld(4,b''.join(struct.pack('<f',v) for v in f))
    return b
def vinfo(name, elem, dims):
    shape=b''.join(ld(1,vi(1,d)) for d in dims)
    return ld(1,name)+ld(2,ld(1,vi(1,elem)+ld(2,shape)))
def node(op, ins, outs, attrs=b''):
    return b''.join(ld(1,i) for i in ins)+b''.join(ld(2,o) for o in outs)+ld(4,op)+attrs
def model(nodes, inits, inputs, outputs, opset=13):
    g=b''.join(ld(1,n) for n in nodes)+ld(2,'g')+b''.join(ld(5,t) for t in inits)+b''.join(ld(11,i) for i in inputs)+b''.join(ld(12,ld(1,o)) for o in outputs)
    return vi(1,7)+ld(7,g)+ld(8,vi(2,opset))
def write(name, data): open(os.path.join(OUT, name), 'wb').write(data)
X=vinfo('x',1,[1,4,8,8])
write('tile_overflow.onnx', model([node('Tile',['x','r'],['y'])],[tensor('r',[4],7,i64=[1,1,1<<61,1<<4])],[X],['y']))
write('tile_negative.onnx', model([node('Tile',['x','r'],['y'])],[tensor('r',[4],7,i64=[1,1,-3,1])],[X],['y']))
write('resize_huge_scale.onnx', model([node('Resize',['x','','s'],['y'])],[tensor('s',[4],1,f=[1,1,3e38,3e38])],[X],['y']))
write('resize_nan_scale.onnx', model([node('Resize',['x','','s'],['y'])],[tensor('s',[4],1,f=[1,1,float('nan'),1])],[X],['y']))
write('resize_negative_sizes.onnx', model([node('Resize',['x','','','z'],['y'])],[tensor('z',[4],7,i64=[1,4,-8,8])],[X],['y']))
write('reshape_float_shape.onnx', model([node('Reshape',['x','s'],['y'])],[tensor('s',[2],1,f=[3e38,1])],[X],['y']))
write('cast_huge.onnx', model([node('Cast',['c'],['d'],ld(5,ld(1,'to')+vi(3,7)+vi(20,2))), node('Reshape',['x','d'],['y'])],[tensor('c',[2],1,f=[3e38,-1])],[X],['y']))
write('convinteger_group.onnx', model([node('Conv',['x','w'],['y'],ld(5,ld(1,'group')+vi(3,(1<<62)+1)+vi(20,2)))],[tensor('w',[4,4,3,3],1,f=[0.0]*144)],[X],['y']))
write('conv_dilation_overflow.onnx', model([node('Conv',['x','w'],['y'],ld(5,ld(1,'dilations')+ld(8,varint(1<<62)+varint(1<<62))+vi(20,7)))],[tensor('w',[4,4,3,3],1,f=[0.0]*144)],[X],['y']))
write('conv_pads_overflow.onnx', model([node('Conv',['x','w'],['y'],ld(5,ld(1,'pads')+ld(8,b''.join(varint(v) for v in [(1<<63)-1]*4))+vi(20,7)))],[tensor('w',[4,4,3,3],1,f=[0.0]*144)],[X],['y']))
write('range_huge.onnx', model([node('Range',['a','b','c'],['r']), node('Reshape',['x','r'],['y'])],[tensor('a',[],7,i64=[-(1<<62)]),tensor('b',[],7,i64=[1<<62]),tensor('c',[],7,i64=[1])],[X],['y']))
write('maxpool_stride_huge.onnx', model([node('MaxPool',['x'],['y'],ld(5,ld(1,'kernel_shape')+ld(8,varint(2)+varint(2))+vi(20,7))+ld(5,ld(1,'strides')+ld(8,varint(1<<63)+varint(1))+vi(20,7)))],[],[X],['y']))
I64MIN = -(1<<63)
def fold(op, a, b, name):
    # y = Reshape(x, Op(a, b)) with int64 constants a, b: folds at import
    write(name, model([node(op,['a','b'],['s']), node('Reshape',['x','s'],['y'])],[tensor('a',[1],7,i64=[a]),tensor('b',[1],7,i64=[b])],[X],['y']))
fold('Mul', 1<<62, 4, 'fold_mul_overflow.onnx')
fold('Add', (1<<63)-1, 1, 'fold_add_overflow.onnx')
fold('Sub', I64MIN, 1, 'fold_sub_overflow.onnx')
fold('Div', I64MIN, -1, 'fold_div_overflow.onnx')
fold('Mod', I64MIN, -1, 'fold_mod_overflow.onnx')
fold('Pow', 10, 40, 'fold_pow_overflow.onnx')
write('maxpool_same_zero_stride.onnx', model([node('MaxPool',['x'],['y'],ld(5,ld(1,'kernel_shape')+ld(8,varint(2)+varint(2))+vi(20,7))+ld(5,ld(1,'strides')+ld(8,varint(0)+varint(1))+vi(20,7))+ld(5,ld(1,'auto_pad')+ld(4,'SAME_UPPER')+vi(20,3)))],[],[X],['y']))
write('conv_same_huge_dilation.onnx', model([node('Conv',['x','w'],['y'],ld(5,ld(1,'dilations')+ld(8,varint(1<<62)+varint(1))+vi(20,7))+ld(5,ld(1,'auto_pad')+ld(4,'SAME_UPPER')+vi(20,3)))],[tensor('w',[4,4,3,3],1,f=[0.0]*144)],[X],['y']))
write('maxpool_huge_kernel.onnx', model([node('MaxPool',['x'],['y'],ld(5,ld(1,'kernel_shape')+ld(8,varint((1<<63)-1)+varint(2))+vi(20,7)))],[],[X],['y']))
# Issue 17: versions the importer does not read, and external data that is not there.
def model_ir(nodes, inits, inputs, outputs, ir, opset):
    g=b''.join(ld(1,n) for n in nodes)+ld(2,'g')+b''.join(ld(5,t) for t in inits)+b''.join(ld(11,i) for i in inputs)+b''.join(ld(12,ld(1,o)) for o in outputs)
    return vi(1,ir)+ld(7,g)+ld(8,vi(2,opset))
write('opset_999.onnx', model_ir([node('Relu',['x'],['y'])],[],[X],['y'],7,999))
write('ir_version_11.onnx', model_ir([node('Relu',['x'],['y'])],[],[X],['y'],11,13))
def external(name, dims, location):
    # TensorProto: dims 1, data_type 2, name 8, external_data 13 (key 1, value 2), data_location 14
    return b''.join(vi(1,d) for d in dims)+vi(2,1)+ld(8,name)+ld(13,ld(1,'location')+ld(2,location))+vi(14,1)
write('external_data_missing.onnx', model([node('Conv',['x','w'],['y'])],[external('w',[4,4,3,3],'weights_not_here.bin')],[X],['y']))
