import math, torch, torch.nn as nn, torch.nn.functional as F
class Attention(nn.Module):
    def __init__(s, dim, heads):
        super().__init__(); s.h=heads; s.wq=nn.Linear(dim,dim,bias=False); s.wk=nn.Linear(dim,dim,bias=False); s.wv=nn.Linear(dim,dim,bias=False); s.wo=nn.Linear(dim,dim,bias=False)
    def forward(s,x):
        b,t,d=x.shape
        q=s.wq(x).view(b,t,s.h,-1).transpose(1,2)
        k=s.wk(x).view(b,t,s.h,-1).transpose(1,2)
        v=s.wv(x).view(b,t,s.h,-1).transpose(1,2)
        att=(q@k.transpose(-2,-1))/math.sqrt(q.shape[-1])
        mask=torch.ones(t,t,dtype=torch.bool).tril()
        att=att.masked_fill(~mask, float('-inf'))
        att=F.softmax(att,dim=-1)
        y=(att@v).transpose(1,2).reshape(b,t,-1)
        return s.wo(y)
class FF(nn.Module):
    def __init__(s,dim):
        super().__init__(); s.w1=nn.Linear(dim,4*dim); s.w2=nn.Linear(4*dim,dim)
    def forward(s,x): return s.w2(F.gelu(s.w1(x)))
class Block(nn.Module):
    def __init__(s,dim,heads):
        super().__init__(); s.attention_norm=nn.LayerNorm(dim); s.attention=Attention(dim,heads); s.ffn_norm=nn.LayerNorm(dim); s.feed_forward=FF(dim)
    def forward(s,x):
        x=x+s.attention(s.attention_norm(x)); return x+s.feed_forward(s.ffn_norm(x))
class GPT(nn.Module):
    def __init__(s,vocab=128,dim=64,heads=4,layers=2,seq=16):
        super().__init__(); s.tok_embeddings=nn.Embedding(vocab,dim); s.pos=nn.Parameter(torch.randn(seq,dim)*0.02)
        s.layers=nn.ModuleList([Block(dim,heads) for _ in range(layers)]); s.norm=nn.LayerNorm(dim); s.output=nn.Linear(dim,vocab,bias=False)
    def forward(s,tok):
        x=s.tok_embeddings(tok)+s.pos[:tok.shape[1]]
        for l in s.layers: x=l(x)
        return s.output(s.norm(x))
