// CPU probe (issue #12, item 4): spmm N on one thread, A 10000² x 200/row f32, B 10000 x 128 f32
// with a share d of nonzeros, as the CPU's row gather adds B's rows (`dense`: 128 columns in
// SIMD, the row 8 entries ahead prefetched) against B listed as its nonzeros first (`build`):
// `lists` in CSR form, `slots` in fixed 256-byte slots padded to runs of 8 pairs (the padding
// adds zeros into 8 spare columns, so that no two pairs of a run chain through one sum).
//   gcc -O3 -mavx2 -mfma bench/probe_cpu_lists.c -o /tmp/l && for d in 0.01 0.02 0.05 0.1; do /tmp/l $d; done
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#define M 10000
#define K 10000
#define R 200
#define N 128
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static uint64_t s=88172645463325252ull; static uint64_t rnd(){s^=s<<13;s^=s>>7;s^=s<<17;return s;}
int *idx; float *w,*B,*C; uint32_t *lstart; uint32_t *lcol; float *lval;
void dense(){
  for(int i=0;i<M;i++){float acc[N+8]={0};
    for(int p=i*R;p<(i+1)*R;p++){ if(p+8<(i+1)*R) for(int l=0;l<N*4;l+=64) __builtin_prefetch((char*)(B+(size_t)idx[p+8]*N)+l);
      const float*b=B+(size_t)idx[p]*N; float wj=w[p]; for(int c=0;c<N;c++) acc[c]+=wj*b[c];}
    memcpy(C+(size_t)i*N,acc,4*N);}
}
#define SLOT 32
typedef struct {uint32_t col; float val;} Pair; Pair *slots;
void build2(){ for(int k=0;k<K;k++){Pair*sl=slots+(size_t)k*SLOT; uint32_t n=1; for(int c=0;c<N;c++){float v=B[(size_t)k*N+c]; if(v!=0&&n<SLOT-8){sl[n].col=c;sl[n].val=v;n++;}} sl[0].col=n-1; while((n-1)%8){sl[n].col=N+(n%8);sl[n].val=0;n++;}}}
void lists2(){
  for(int i=0;i<M;i++){float acc[N+8]={0};
    for(int p=i*R;p<(i+1)*R;p++){ if(p+8<(i+1)*R){ __builtin_prefetch(slots+(size_t)idx[p+8]*SLOT);}
      const Pair*sl=slots+(size_t)idx[p]*SLOT; float wj=w[p]; uint32_t n=sl[0].col; for(uint32_t q=1;q<=n;q+=8){ 
#pragma GCC unroll 8
 for(int u=0;u<8;u++) acc[sl[q+u].col]+=wj*sl[q+u].val;}}
    memcpy(C+(size_t)i*N,acc,4*N);}
}
void build(){ uint32_t n=0; for(int k=0;k<K;k++){lstart[k]=n; for(int c=0;c<N;c++){float v=B[(size_t)k*N+c]; if(v!=0){lcol[n]=c;lval[n]=v;n++;}}} lstart[K]=n;}
void lists(){
  for(int i=0;i<M;i++){float acc[N+8]={0};
    for(int p=i*R;p<(i+1)*R;p++){ if(p+8<(i+1)*R){int k=idx[p+8]; __builtin_prefetch(lcol+lstart[k]); __builtin_prefetch(lval+lstart[k]);}
      int k=idx[p]; float wj=w[p]; for(uint32_t q=lstart[k];q<lstart[k+1];q++) acc[lcol[q]]+=wj*lval[q];}
    memcpy(C+(size_t)i*N,acc,4*N);}
}
int main(int argc,char**argv){ double d=atof(argv[1]);
  idx=malloc(sizeof(int)*M*R); w=malloc(4*M*R); B=malloc(4L*K*N); C=malloc(4L*M*N);
  lstart=malloc(4*(K+1)); lcol=malloc(4L*K*N); lval=malloc(4L*K*N);
  for(long p=0;p<M*R;p++){idx[p]=rnd()%K; w[p]=(rnd()%1000)/1000.0f;}
  for(long e=0;e<(long)K*N;e++) B[e]=((rnd()%10000)<d*10000)?(rnd()%1000)/500.0f-1:0;
  double best[3]={1e9,1e9,1e9}; slots=malloc(sizeof(Pair)*SLOT*(size_t)K); double b4=1e9;
  for(int r=0;r<7;r++){double t=now();dense();double t1=now();build();double t2=now();lists();double t3=now();
    if(t1-t<best[0])best[0]=t1-t; if(t2-t1<best[1])best[1]=t2-t1; if(t3-t2<best[2])best[2]=t3-t2; build2(); double t4=now(); lists2(); double t5=now(); if(t5-t4<b4)b4=t5-t4;}
  printf("density %.2f: dense %.2f ms, build %.2f ms, lists %.2f ms, slots %.2f ms\n",d,best[0]*1e3,best[1]*1e3,best[2]*1e3,b4*1e3);
}
